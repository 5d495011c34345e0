#include "core/service.hpp"

#include <algorithm>
#include <cctype>

namespace tandem {

std::optional<std::string> service_object_name(const std::string& name) {
    std::string out;
    for (char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u)) {
            out += static_cast<char>(std::tolower(u));
        } else if (!out.empty() && out.back() != '-') {
            out += '-';
        }
    }
    while (!out.empty() && !std::isalpha(static_cast<unsigned char>(out.front()))) {
        out.erase(out.begin());
    }
    out.resize(std::min<std::size_t>(out.size(), 50));
    while (!out.empty() && out.back() == '-') {
        out.pop_back();
    }
    if (out.empty()) {
        return std::nullopt;
    }
    return out;
}

} // namespace tandem
