#pragma once
// What the plain HTTP/1.1 exchange (plain_http.hpp) puts on the wire: an http:// URL split for a socket, and
// the request's bytes. Internal to tandem_net.

#include <optional>
#include <string>
#include <string_view>

#include "net/http_client.hpp"

namespace tandem::net::detail {

struct PlainUrl {
    std::string host;        // for getaddrinfo: no brackets
    std::string port;        // "80" when the URL has none
    std::string host_header; // host[:port] as written, the port left out when it is 80 (as curl does)
    std::string target;      // path and query, "/" when empty
};

// nullopt for anything but http://host[:port][/path][?query]: no user info, nothing that needs encoding.
std::optional<PlainUrl> split_url(std::string_view url);

// Request line, Host, User-Agent and Accept (unless the caller gives them), the caller's headers,
// Content-Type, Content-Length when there is a body (always for POST), then the body.
std::string render_request(const HttpRequest& req, const PlainUrl& url);

bool iequals(std::string_view a, std::string_view b);
// Whether a comma-separated header value (Connection, Transfer-Encoding) has this token.
bool has_token(std::string_view list, std::string_view token);

} // namespace tandem::net::detail
