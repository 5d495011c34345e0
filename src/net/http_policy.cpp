#include "net/http_policy.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <iomanip>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/redact.hpp"

namespace tandem::net {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string one_line(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        const char folded = control ? ' ' : c;
        if (folded == ' ' && (out.empty() || out.back() == ' ')) {
            continue;
        }
        out.push_back(folded);
    }
    while (!out.empty() && out.back() == ' ') {
        out.pop_back();
    }
    return out;
}

std::string trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
        return {};
    }
    return std::string(s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1));
}

// The message a JSON error body carries, if it is one of the shapes our servers send.
std::optional<std::string> json_message(std::string_view body) {
    if (body.empty() || body.front() != '{') {
        return std::nullopt;
    }
    const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) {
        return std::nullopt;
    }
    if (auto it = doc.find("message"); it != doc.end() && it->is_string()) {
        return it->get<std::string>(); // Kubernetes metav1.Status
    }
    if (auto it = doc.find("errors");
        it != doc.end() && it->is_array() && !it->empty() && (*it)[0].is_object()) {
        const auto& first = (*it)[0]; // slurmrestd
        for (const char* key : {"description", "error"}) {
            if (auto f = first.find(key);
                f != first.end() && f->is_string() && !f->get<std::string>().empty()) {
                return f->get<std::string>();
            }
        }
    }
    return std::nullopt;
}

} // namespace

UrlTarget parse_target(std::string_view url) {
    UrlTarget t;
    std::string_view rest = url;
    if (auto pos = rest.find("://"); pos != std::string_view::npos) {
        t.scheme = std::string(rest.substr(0, pos));
        std::transform(t.scheme.begin(), t.scheme.end(), t.scheme.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        rest.remove_prefix(pos + 3);
    } else {
        t.scheme = "http";
    }
    const auto authority_end = std::min(rest.find_first_of("/?#"), rest.size());
    std::string_view authority = rest.substr(0, authority_end);
    rest.remove_prefix(authority_end);
    if (auto at = authority.rfind('@'); at != std::string_view::npos) {
        authority.remove_prefix(at + 1);
    }
    const auto bracket = authority.rfind(']');
    const auto colon = authority.rfind(':');
    const bool has_port =
        colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
    t.host_port = std::string(authority);
    if (!has_port) {
        t.host_port += t.scheme == "https" ? ":443" : ":80";
    }
    t.path = std::string(rest.substr(0, std::min(rest.find_first_of("?#"), rest.size())));
    if (t.path.empty()) {
        t.path = "/";
    }
    return t;
}

bool is_credential_header(std::string_view name) {
    for (std::string_view secret : {"authorization", "proxy-authorization", "x-slurm-user-token", "cookie"}) {
        if (iequals(name, secret)) {
            return true;
        }
    }
    return false;
}

std::vector<std::string> credential_values(const Headers& headers) {
    std::vector<std::string> out;
    for (const auto& [name, value] : headers) {
        if (!is_credential_header(name)) {
            continue;
        }
        out.push_back(value);
        const std::string sent = trim(value); // what goes on the wire
        if (sent != value) {
            out.push_back(sent);
        }
        if (auto space = sent.find(' '); space != std::string::npos) {
            out.push_back(
                trim(std::string_view(sent).substr(space + 1))); // "Bearer <token>": the token alone
        }
    }
    return out;
}

ErrorKind classify_status(int status) {
    if (status == 401 || status == 403 || status == 511) { // 511: slurmrestd 23.11+ refusing a token
        return ErrorKind::unauthorized;
    }
    if (status == 404) {
        return ErrorKind::not_found;
    }
    if (status == 408 || status == 504) {
        return ErrorKind::timeout;
    }
    if (status == 429 || (status >= 500 && status <= 599)) {
        return ErrorKind::unavailable;
    }
    return ErrorKind::remote;
}

std::string_view standard_reason(int status) {
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 511:
        return "Network Authentication Required";
    default:
        return "";
    }
}

std::string body_excerpt(std::string_view body, std::size_t max_chars) {
    std::string text = one_line(json_message(body).value_or(std::string(body)));
    if (text.size() <= max_chars) {
        return text;
    }
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
        --cut; // do not split a UTF-8 sequence
    }
    text.resize(cut);
    return text + "...";
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                           std::chrono::system_clock::time_point now) {
    const std::string v = one_line(value);
    if (v.empty()) {
        return std::nullopt;
    }
    if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); })) {
        if (v.size() > 9) {
            return std::chrono::hours(24 * 365); // absurd but valid: "a very long time"
        }
        return std::chrono::seconds(std::stol(v));
    }
    std::tm tm{};
    std::istringstream in(v);
    in.imbue(std::locale::classic());
    in >> std::get_time(&tm, "%a, %d %b %Y %H:%M:%S");
    if (in.fail()) {
        return std::nullopt;
    }
    const auto at = std::chrono::system_clock::from_time_t(timegm(&tm));
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(at - now));
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry_number, double unit_random) {
    auto d = policy.base_delay;
    for (int i = 1; i < retry_number && d < policy.max_delay; ++i) {
        d *= 2;
    }
    d = std::min(d, policy.max_delay);
    const double r = std::clamp(unit_random, 0.0, 1.0);
    return d / 2 +
           std::chrono::milliseconds(static_cast<long long>(r * static_cast<double>((d / 2).count())));
}

std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& policy, const HttpRequest& request,
                                                     const AttemptFailure& failure, int attempts_done,
                                                     double unit_random) {
    if (attempts_done >= policy.max_attempts || failure.data_delivered || !is_retryable(failure.error.kind)) {
        return std::nullopt;
    }
    if (failure.request_sent && !request.idempotent) {
        return std::nullopt; // the server may have acted on it: sending it again could do it twice
    }
    if (failure.retry_after) {
        if (*failure.retry_after > policy.max_retry_after) {
            return std::nullopt;
        }
        return *failure.retry_after;
    }
    return backoff_delay(policy, attempts_done, unit_random);
}

std::optional<std::chrono::milliseconds> next_attempt_timeout(std::chrono::milliseconds timeout,
                                                              std::chrono::milliseconds spent) {
    if (timeout.count() <= 0) {
        return timeout; // no limit, no budget
    }
    const auto left = 2 * timeout - spent;
    if (left < timeout / 4 || left.count() <= 0) {
        return std::nullopt;
    }
    return std::min(timeout, left);
}

bool body_over_limit(const HttpRequest& request, std::uint64_t collected,
                     std::optional<std::uint64_t> announced) {
    const std::uint64_t limit = request.max_body_bytes;
    return collected > limit || (announced && *announced > limit);
}

AttemptFailure body_too_large(const HttpRequest& request, std::optional<std::uint64_t> announced) {
    const UrlTarget t = parse_target(request.url);
    constexpr std::size_t mib = std::size_t{1} << 20;
    const std::size_t limit = request.max_body_bytes;
    const std::string most =
        limit % mib == 0 ? fmt::format("{} MiB", limit / mib) : fmt::format("{} bytes", limit);
    const std::string size =
        announced ? fmt::format("a body of {} bytes,", *announced) : std::string("a body");
    return attempt_failure(ErrorKind::remote,
                           fmt::format("{} answered {} {} with {} over the {} tandem reads", t.host_port,
                                       request.method, t.path, size, most),
                           true);
}

Error status_error(const HttpRequest& request, int status, std::string_view reason, std::string_view body,
                   const std::vector<std::string>& secrets) {
    const UrlTarget target = parse_target(request.url);
    const std::string why = reason.empty() ? std::string(standard_reason(status)) : one_line(reason);
    std::string message = fmt::format("{} answered HTTP {}{}{} to {} {}", target.host_port, status,
                                      why.empty() ? "" : " ", why, request.method, target.path);
    const std::string excerpt = body_excerpt(redact(body, secrets));
    if (!excerpt.empty()) {
        message += ": " + excerpt;
    }
    Error error{classify_status(status), std::move(message), {}};
    if (error.kind == ErrorKind::unauthorized) {
        error.hint =
            "check the credentials configured for this cluster (an expired token is the usual cause)";
    }
    return error;
}

Error final_error(const RetryPolicy& policy, const AttemptFailure& failure, int attempts,
                  const std::vector<std::string>& secrets) {
    Error error = failure.error;
    if (attempts > 1) {
        error.message += fmt::format(" (after {} attempts)", attempts);
    }
    if (failure.retry_after && *failure.retry_after > policy.max_retry_after &&
        attempts < policy.max_attempts) {
        error.message +=
            fmt::format(" (server asks to retry after {} s)",
                        std::chrono::duration_cast<std::chrono::seconds>(*failure.retry_after).count());
    }
    error.message = one_line(redact(error.message, secrets));
    error.hint = one_line(redact(error.hint, secrets));
    return error;
}

AttemptFailure attempt_failure(ErrorKind kind, std::string message, bool request_sent, bool data_delivered) {
    return AttemptFailure{Error{kind, std::move(message), {}}, request_sent, data_delivered, std::nullopt};
}

bool deliverable(int status, const std::vector<int>& pass_statuses) {
    return (status >= 200 && status <= 299) ||
           std::find(pass_statuses.begin(), pass_statuses.end(), status) != pass_statuses.end();
}

std::string_view trim_header_value(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
        s.remove_suffix(1);
    }
    return s;
}

std::optional<std::string> malformed_header(const HttpRequest& req) {
    auto breaks = [](std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; };
    for (const auto& [name, value] : req.headers) {
        if (name.empty() || breaks(name) || name.find(':') != std::string::npos ||
            breaks(trim_header_value(value))) {
            return name; // never the value: it may be a credential
        }
    }
    if (breaks(req.content_type)) {
        return std::string("Content-Type");
    }
    return std::nullopt;
}

AttemptFailure refused_status(const HttpRequest& request, const HttpResponse& response,
                              std::string_view reason, std::string_view body,
                              const std::vector<std::string>& secrets) {
    AttemptFailure failure{status_error(request, response.status, reason, body, secrets), true, false,
                           std::nullopt};
    if (response.status == 429 || response.status == 503) {
        if (auto value = response.header("retry-after")) {
            failure.retry_after = parse_retry_after(*value, std::chrono::system_clock::now());
        }
    }
    return failure;
}

} // namespace tandem::net
