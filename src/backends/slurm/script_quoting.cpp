// bash and #SBATCH quoting (see script_quoting.hpp for the two grammars).

#include "backends/slurm/script_quoting.hpp"

#include <algorithm>
#include <cctype>

namespace tandem::slurm {

std::optional<std::string> sbatch_value(std::string_view value) {
    if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos) {
        return std::nullopt;
    }
    std::string lower(value);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("packjob") != std::string::npos) {
        return std::nullopt;
    }
    const bool bare = !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
        return std::isalnum(c) ||
               std::string_view("_-.,/:%+=@").find(static_cast<char>(c)) != std::string_view::npos;
    });
    if (bare) {
        return std::string(value);
    }
    std::string out = "\"";
    for (const char c : value) {
        if (c == '\\' || c == '"') {
            out += '\\';
        }
        out += c;
    }
    out += '"';
    return out;
}

std::string heredoc_delimiter(std::string_view text, std::string_view base) {
    std::string candidate(base);
    for (int n = 1; text.find(candidate) != std::string_view::npos; ++n) {
        candidate = std::string(base) + "_" + std::to_string(n);
    }
    return candidate;
}

} // namespace tandem::slurm
