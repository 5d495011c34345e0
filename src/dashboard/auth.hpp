#pragma once
// The dashboard's access rules as pure functions (the server applies them to every request but the
// stylesheet and script): a random token, from the URL's query or the cookie set from it, compared in
// constant time; a cancel also carries the page's CSRF value and, when the browser sends one, an Origin
// naming this server.

#include <optional>
#include <string>
#include <string_view>

namespace tandem::dashboard {

// Compares without an early exit, so the time taken does not tell how much of a guess was right.
bool constant_time_equal(std::string_view a, std::string_view b);

// The value of cookie `name` in a Cookie header ("a=1; b=2").
std::optional<std::string> cookie_value(std::string_view header, std::string_view name);

// The cookie's name for a dashboard on `port`: browsers share cookies between the ports of a host, so
// two dashboards on one machine must not overwrite each other's.
std::string cookie_name(int port);

enum class Access { granted, no_token, wrong_token };
// `query_token` and `cookie_token` as the request carried them (nullopt: absent); the query wins.
Access check_access(const std::optional<std::string>& query_token, const std::optional<std::string>& cookie_token,
                    std::string_view token);

// Whether a POST may act: its CSRF field matches, and its Origin, when sent, is http://<host header>.
bool post_allowed(std::string_view csrf_field, std::string_view csrf, std::string_view origin_header,
                  std::string_view host_header);

// Splits an incomplete UTF-8 sequence off the end of `text` (it is kept for the next chunk of a stream).
std::string take_complete_utf8(std::string& pending, std::string_view chunk);

} // namespace tandem::dashboard
