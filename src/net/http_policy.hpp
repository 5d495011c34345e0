#pragma once
// The decisions of the HTTP layer, kept apart from libcurl so they read (and test) as plain functions:
// how a status is classified, what an error message says, which credential values are redacted, and
// when and after how long a failed attempt is retried.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "net/http_client.hpp"

namespace tandem::net {

// What an error message may say about a URL: never its user-info, query or fragment.
struct UrlTarget {
    std::string scheme;    // "https"; "http" when the URL has none
    std::string host_port; // "api.example.org:6443", default port filled in
    std::string path;      // "/api/v1/pods", "/" when empty
};
UrlTarget parse_target(std::string_view url);

// Headers whose values are credentials: Authorization, Proxy-Authorization, X-SLURM-USER-TOKEN, Cookie.
bool is_credential_header(std::string_view name);
// The secret values of a request's headers: each whole value and, for "Scheme token", the token alone
// (servers echo either).
std::vector<std::string> credential_values(const Headers& headers);

// Classification of a non-2xx status: 401/403 unauthorized, 404 not_found, 408/504 timeout,
// 429/5xx unavailable, anything else remote.
ErrorKind classify_status(int status);
std::string_view standard_reason(int status);

// A single line, at most max_chars bytes (cut on a UTF-8 boundary, "..." appended), control characters
// folded to spaces. A JSON body's own message (Kubernetes Status `message`, Slurm `errors[0]`) is preferred.
std::string body_excerpt(std::string_view body, std::size_t max_chars = 200);

// Retry-After as delay-seconds or an HTTP-date; nothing when unparsable.
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                           std::chrono::system_clock::time_point now);

// Exponential backoff with "equal jitter": for the n-th retry (n >= 1), d = min(max, base * 2^(n-1)),
// and the delay is d/2 + unit_random * d/2, unit_random in [0, 1).
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry_number, double unit_random);

// One failed attempt as the retry loop sees it.
struct AttemptFailure {
    Error error;
    bool request_sent = true;    // false: failed before any byte of the request could reach the server
    bool data_delivered = false; // a stream already handed pieces to its consumer
    std::optional<std::chrono::milliseconds> retry_after;
};

// A failed attempt with no Retry-After.
AttemptFailure attempt_failure(ErrorKind kind, std::string message, bool request_sent,
                               bool data_delivered = false);

// What a stream hands each piece of a body to; false ends the stream cleanly.
using ChunkSink = std::function<bool(std::string_view)>;

// One attempt as the retry loop sees it, whichever transport made it (libcurl, or the plain HTTP/1.1
// exchange for http:// URLs).
struct AttemptResult {
    std::optional<AttemptFailure> failure; // empty: success (or a stream its consumer ended)
    HttpResponse response;                 // status and headers; the body only when not streaming
    long new_connections = 0;              // connections opened by this attempt
    std::chrono::milliseconds elapsed{0};
};

// Whether a response with this status is handed to the caller: 2xx and the request's pass_statuses.
bool deliverable(int status, const std::vector<int>& pass_statuses);

// The name of the first header that would break the request (empty name, a colon in the name, a line
// break in the name or the trimmed value), or nothing. Never the value: it may be a credential.
std::optional<std::string> malformed_header(const HttpRequest& request);

// Spaces and tabs (and, at the end, CR/LF) off both ends: header values are sent and read this way.
std::string_view trim_header_value(std::string_view value);

// The failure for a response the caller did not accept: status_error with its body, and the Retry-After
// of a 429 or 503.
AttemptFailure refused_status(const HttpRequest& request, const HttpResponse& response,
                              std::string_view reason, std::string_view body,
                              const std::vector<std::string>& secrets);

// How long to wait before the next attempt, or nothing to give up. attempts_done counts the failed one.
std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& policy, const HttpRequest& request,
                                                     const AttemptFailure& failure, int attempts_done,
                                                     double unit_random);

// Every attempt of one request, and the waits between them, end within twice its timeout (a cluster's
// deadline is 2 x timeout_seconds + 5 s: a request may be retried once, or more often while that leaves
// time). Given what was spent so far (attempts and waits, the coming wait included), the timeout of the
// next attempt: the request's own, or what is left when that is less; nothing when under a quarter of the
// timeout is left, too short to be worth an attempt. A request without a timeout (a stream) has no budget.
std::optional<std::chrono::milliseconds> next_attempt_timeout(std::chrono::milliseconds timeout,
                                                              std::chrono::milliseconds spent);

// Whether a delivered body grown to `collected` bytes, or announced at `announced` (Content-Length), is
// over the request's max_body_bytes.
bool body_over_limit(const HttpRequest& request, std::uint64_t collected,
                     std::optional<std::uint64_t> announced = std::nullopt);
// The failure for such a body: `remote`, one line, never retried (the next answer would be as large).
AttemptFailure body_too_large(const HttpRequest& request, std::optional<std::uint64_t> announced);

// "<host:port> answered HTTP 401 Unauthorized to GET /path: <excerpt>". The body is redacted before it
// is cut, so a secret cannot leak half-cut past the redaction.
Error status_error(const HttpRequest& request, int status, std::string_view reason, std::string_view body,
                   const std::vector<std::string>& secrets);

// The error returned after the last attempt: attempt count appended, message and hint redacted.
Error final_error(const RetryPolicy& policy, const AttemptFailure& failure, int attempts,
                  const std::vector<std::string>& secrets);

} // namespace tandem::net
