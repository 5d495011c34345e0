#pragma once
// Quoting for the two languages an sbatch script speaks: bash (the body) and sbatch's own #SBATCH
// option parser (src/sbatch/opt.c, _get_argument: whitespace separates words, "..." and '...' group,
// backslash escapes the next character, an unquoted # starts a comment; there is no line continuation).
// sbatch refuses any script containing CR LF ("Batch script contains DOS line breaks"), so nothing here
// ever writes a CR byte.

#include <optional>
#include <string>
#include <string_view>

#include "core/shell_words.hpp"

namespace tandem::slurm {

// shell_quote and is_shell_name (core/shell_words.hpp), by their names here.
using tandem::is_shell_name;
using tandem::shell_quote;

// `value` as one #SBATCH option value: bare when it is made of characters sbatch passes through
// untouched, else double-quoted with \ and " escaped. nullopt when no #SBATCH line can carry it: a line
// break or NUL, or "packjob", which sbatch blanks out of every #SBATCH line before parsing it.
std::optional<std::string> sbatch_value(std::string_view value);

// A here-document delimiter that does not occur anywhere in `text` (so no line of it can end the
// here-document): `base`, else `base_1`, `base_2`, ...
std::string heredoc_delimiter(std::string_view text, std::string_view base);

} // namespace tandem::slurm
