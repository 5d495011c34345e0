#pragma once
// Quoting for the two languages an sbatch script speaks: bash (the body) and sbatch's own #SBATCH
// option parser (src/sbatch/opt.c, _get_argument: whitespace separates words, "..." and '...' group,
// backslash escapes the next character, an unquoted # starts a comment; there is no line continuation).
// sbatch refuses any script containing CR LF ("Batch script contains DOS line breaks"), so nothing here
// ever writes a CR byte.

#include <optional>
#include <string>
#include <string_view>

namespace tandem::slurm {

// A bash word whose value is exactly `value`: single quotes, with ' written as '\'' and CR as '$'\r''.
// `value` must not contain NUL (no bash string can).
std::string shell_quote(std::string_view value);

// `value` as one #SBATCH option value: bare when it is made of characters sbatch passes through
// untouched, else double-quoted with \ and " escaped. nullopt when no #SBATCH line can carry it: a line
// break or NUL, or "packjob", which sbatch blanks out of every #SBATCH line before parsing it.
std::optional<std::string> sbatch_value(std::string_view value);

// A here-document delimiter that does not occur anywhere in `text` (so no line of it can end the
// here-document): `base`, else `base_1`, `base_2`, ...
std::string heredoc_delimiter(std::string_view text, std::string_view base);

// bash's own rule for variable names: [A-Za-z_][A-Za-z0-9_]*.
bool is_shell_name(std::string_view name);

} // namespace tandem::slurm
