#include "core/redact.hpp"

#include <algorithm>

namespace tandem {

std::string redact(std::string_view text, const std::vector<std::string>& secret_values) {
    std::string out(text);
    // Longest first, so a secret that contains another is replaced whole.
    std::vector<std::string> values = secret_values;
    std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& v : values) {
        if (v.size() < 3) {
            continue;
        }
        for (auto pos = out.find(v); pos != std::string::npos; pos = out.find(v, pos + k_redacted.size())) {
            out.replace(pos, v.size(), k_redacted);
        }
    }
    return out;
}

std::vector<std::string> secret_values(const std::vector<std::pair<std::string, std::string>>& secrets) {
    std::vector<std::string> out;
    out.reserve(secrets.size());
    for (const auto& [k, v] : secrets) {
        out.push_back(v);
    }
    return out;
}

} // namespace tandem
