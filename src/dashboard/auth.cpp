#include "dashboard/auth.hpp"

#include <fmt/format.h>

namespace tandem::dashboard {

bool constant_time_equal(std::string_view a, std::string_view b) {
    // Every byte of the longer one is looked at; a length difference is folded into the result.
    const std::size_t n = a.size() > b.size() ? a.size() : b.size();
    unsigned diff = a.size() == b.size() ? 0u : 1u;
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned>(x ^ y);
    }
    return diff == 0 && !a.empty();
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
    while (!header.empty()) {
        const auto semi = header.find(';');
        std::string_view part = header.substr(0, semi);
        header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
        while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) {
            part.remove_prefix(1);
        }
        const auto eq = part.find('=');
        if (eq != std::string_view::npos && part.substr(0, eq) == name) {
            auto value = part.substr(eq + 1);
            while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
                value.remove_suffix(1);
            }
            return std::string(value);
        }
    }
    return std::nullopt;
}

std::string cookie_name(int port) {
    return fmt::format("tandem_dashboard_{}", port);
}

Access check_access(const std::optional<std::string>& query_token, const std::optional<std::string>& cookie_token,
                    std::string_view token) {
    const auto& given = query_token ? query_token : cookie_token;
    if (!given || given->empty()) {
        return Access::no_token;
    }
    return constant_time_equal(*given, token) ? Access::granted : Access::wrong_token;
}

bool post_allowed(std::string_view csrf_field, std::string_view csrf, std::string_view origin_header,
                  std::string_view host_header) {
    if (!constant_time_equal(csrf_field, csrf)) {
        return false;
    }
    if (origin_header.empty()) {
        return true; // older browsers and curl send none; the CSRF field already proves the page
    }
    return origin_header == fmt::format("http://{}", host_header);
}

std::string take_complete_utf8(std::string& pending, std::string_view chunk) {
    std::string text = std::move(pending);
    pending.clear();
    text.append(chunk);
    // Walk back over at most 3 continuation bytes to the lead byte of the last sequence.
    std::size_t i = text.size();
    int back = 0;
    while (i > 0 && back < 4 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) {
        --i;
        ++back;
    }
    if (i == 0) {
        return text;
    }
    const auto lead = static_cast<unsigned char>(text[i - 1]);
    std::size_t need = 0;
    if ((lead & 0xE0) == 0xC0) {
        need = 2;
    } else if ((lead & 0xF0) == 0xE0) {
        need = 3;
    } else if ((lead & 0xF8) == 0xF0) {
        need = 4;
    }
    const std::size_t have = text.size() - (i - 1);
    if (need > 0 && have < need) {
        pending = text.substr(i - 1);
        text.resize(i - 1);
    }
    return text;
}

} // namespace tandem::dashboard
