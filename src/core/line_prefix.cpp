#include "core/line_prefix.hpp"

namespace tandem {

std::string LinePrefix::feed(std::string_view chunk) {
    m_partial.append(chunk);
    std::string out;
    std::size_t start = 0;
    for (auto nl = m_partial.find('\n'); nl != std::string::npos; nl = m_partial.find('\n', start)) {
        out += m_prefix;
        out.append(m_partial, start, nl + 1 - start);
        start = nl + 1;
    }
    m_partial.erase(0, start);
    return out;
}

std::string LinePrefix::finish() {
    if (m_partial.empty()) {
        return {};
    }
    std::string out = m_prefix + m_partial + "\n";
    m_partial.clear();
    return out;
}

} // namespace tandem
