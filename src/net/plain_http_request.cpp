#include "net/plain_http_request.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "net/http_policy.hpp"

namespace tandem::net::detail {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

bool has_token(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        const auto comma = list.find(',');
        if (iequals(trim_header_value(list.substr(0, comma)), token)) {
            return true;
        }
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return false;
}

std::optional<PlainUrl> split_url(std::string_view url) {
    if (url.size() < 7 || !iequals(url.substr(0, 7), "http://")) {
        return std::nullopt;
    }
    const std::string_view rest = url.substr(7);
    const auto end = rest.find_first_of("/?#");
    const std::string_view authority = rest.substr(0, end);
    std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    tail = tail.substr(0, tail.find('#'));
    if (authority.empty() || authority.find('@') != std::string_view::npos ||
        tail.find_first_of(" \t\r\n") != std::string_view::npos) {
        return std::nullopt; // user info or characters that need encoding: libcurl's business
    }
    std::string_view host = authority;
    std::string_view port;
    std::string_view bracketed = authority;
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        host = authority.substr(1, close - 1);
        bracketed = authority.substr(0, close + 1);
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                return std::nullopt;
            }
            port = after.substr(1);
        }
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        host = authority.substr(0, colon);
        bracketed = host;
        port = authority.substr(colon + 1);
    }
    if (host.empty() || host.find_first_of(" \t\r\n") != std::string_view::npos ||
        port.find_first_not_of("0123456789") != std::string_view::npos || port.size() > 5) {
        return std::nullopt;
    }
    PlainUrl u;
    u.host = std::string(host);
    u.port = port.empty() ? "80" : std::string(port);
    u.host_header = u.port == "80" ? std::string(bracketed) : fmt::format("{}:{}", bracketed, u.port);
    u.target = tail.empty() ? "/" : tail.front() == '?' ? fmt::format("/{}", tail) : std::string(tail);
    return u;
}

std::string render_request(const HttpRequest& req, const PlainUrl& url) {
    auto given = [&](std::string_view name) {
        return std::any_of(req.headers.begin(), req.headers.end(),
                           [&](const auto& h) { return iequals(h.first, name); });
    };
    std::string out = fmt::format("{} {} HTTP/1.1\r\n", req.method, url.target);
    if (!given("Host")) {
        out += fmt::format("Host: {}\r\n", url.host_header);
    }
    if (!given("User-Agent")) {
        out += "User-Agent: tandem\r\n";
    }
    if (!given("Accept")) {
        out += "Accept: */*\r\n";
    }
    for (const auto& [name, value] : req.headers) {
        out += fmt::format("{}: {}\r\n", name, trim_header_value(value));
    }
    if (!req.content_type.empty()) {
        out += fmt::format("Content-Type: {}\r\n", req.content_type);
    }
    const bool with_body = req.method != "HEAD" && (req.method == "POST" || !req.body.empty());
    if (with_body) {
        out += fmt::format("Content-Length: {}\r\n", req.body.size());
    }
    out += "\r\n";
    if (with_body) {
        out += req.body;
    }
    return out;
}

} // namespace tandem::net::detail
