// srun --label lines -> what `logs` prints (see rank_output.hpp).

#include "backends/slurm/rank_output.hpp"

#include <cctype>

#include <fmt/format.h>

namespace tandem::slurm {

namespace {

// "  12: text" -> rank 12 and where the text starts.
std::optional<std::pair<int, std::size_t>> label_of(std::string_view line) {
    std::size_t i = 0;
    while (i < line.size() && line[i] == ' ') {
        ++i;
    }
    const std::size_t digits = i;
    int rank = 0;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) && i - digits < 6) {
        rank = rank * 10 + (line[i] - '0');
        ++i;
    }
    if (i == digits || line.substr(i, 2) != ": ") {
        // srun writes "K: " even before an empty line; a bare "K:" at the end is an empty labelled line.
        if (i > digits && line.substr(i) == ":") {
            return std::pair{rank, line.size()};
        }
        return std::nullopt;
    }
    return std::pair{rank, i + 2};
}

} // namespace

std::optional<std::string> RankOutput::line(std::string_view text) const {
    auto label = label_of(text);
    if (!label) {
        return m_node ? std::nullopt : std::optional<std::string>(text);
    }
    const auto [rank, at] = *label;
    if (m_node) {
        return rank == *m_node ? std::optional<std::string>(text.substr(at)) : std::nullopt;
    }
    return m_prefix ? fmt::format("[rank {}] {}", rank, text.substr(at)) : std::string(text.substr(at));
}

std::string RankOutput::feed(std::string_view chunk) {
    std::string out;
    while (!chunk.empty()) {
        const auto nl = chunk.find('\n');
        if (nl == std::string_view::npos) {
            m_partial.append(chunk);
            break;
        }
        m_partial.append(chunk.substr(0, nl));
        chunk.remove_prefix(nl + 1);
        if (auto shown = line(m_partial)) {
            out += *shown;
            out += '\n';
        }
        m_partial.clear();
    }
    return out;
}

std::string RankOutput::finish() {
    auto shown = line(m_partial);
    m_partial.clear();
    return shown.value_or(std::string());
}

} // namespace tandem::slurm
