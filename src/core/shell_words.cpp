// bash quoting for the script renderers (see shell_words.hpp).

#include "core/shell_words.hpp"

#include <algorithm>
#include <cctype>

namespace tandem {

std::string shell_quote(std::string_view value) {
    std::string out = "'";
    for (const char c : value) {
        if (c == '\'') {
            out += "'\\''";
        } else if (c == '\r') {
            out += "'$'\\r''";
        } else {
            out += c;
        }
    }
    out += '\'';
    return out;
}

bool is_shell_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

} // namespace tandem
