// The HTTP layer's decisions as plain functions: targets, classification, excerpts, Retry-After, backoff
// and the retry rules.

#include <catch2/catch.hpp>

#include "net/curl_exchange.hpp"
#include "net/http_policy.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace std::chrono_literals;

TEST_CASE("parse_target keeps host:port and path, drops user-info, query and fragment") {
    auto t =
        parse_target("https://user:pw@api.example.org:6443/api/v1/pods?labelSelector=a%3Db&token=x#frag");
    CHECK(t.scheme == "https");
    CHECK(t.host_port == "api.example.org:6443");
    CHECK(t.path == "/api/v1/pods");
    CHECK(parse_target("https://k8s.local").host_port == "k8s.local:443");
    CHECK(parse_target("https://k8s.local").path == "/");
    CHECK(parse_target("http://slurm:6820?x=1").host_port == "slurm:6820");
    CHECK(parse_target("http://slurm:6820?x=1").path == "/");
    CHECK(parse_target("HTTP://[::1]/x").host_port == "[::1]:80");
    CHECK(parse_target("http://[::1]:8080/x").host_port == "[::1]:8080");
    CHECK(parse_target("localhost:9/x").host_port == "localhost:9");
}

TEST_CASE("statuses are classified so that only transient ones are retryable") {
    CHECK(classify_status(401) == ErrorKind::unauthorized);
    CHECK(classify_status(403) == ErrorKind::unauthorized);
    CHECK(classify_status(511) == ErrorKind::unauthorized); // slurmrestd 23.11+: a refused token, not an outage
    CHECK(classify_status(404) == ErrorKind::not_found);
    CHECK(classify_status(408) == ErrorKind::timeout);
    CHECK(classify_status(504) == ErrorKind::timeout);
    CHECK(classify_status(429) == ErrorKind::unavailable);
    CHECK(classify_status(500) == ErrorKind::unavailable);
    CHECK(classify_status(503) == ErrorKind::unavailable);
    CHECK(classify_status(400) == ErrorKind::remote);
    CHECK(classify_status(409) == ErrorKind::remote);
    CHECK(classify_status(410) == ErrorKind::remote);
    CHECK(classify_status(302) == ErrorKind::remote);
}

TEST_CASE("credential values include the token alone as well as the whole header value") {
    const Headers headers = {{"authorization", "Bearer abc.def"},
                             {"X-Slurm-User-Token", "jwt-1"},
                             {"X-SLURM-USER-NAME", "alice"},
                             {"Cookie", "a=b"}};
    const auto values = credential_values(headers);
    CHECK(values == std::vector<std::string>{"Bearer abc.def", "abc.def", "jwt-1", "a=b"});
    CHECK(credential_values({{"Authorization", "Bearer  tok\n"}}) ==
          std::vector<std::string>{"Bearer  tok\n", "Bearer  tok", "tok"});
}

TEST_CASE("body_excerpt is one line, short, and prefers a JSON error message") {
    CHECK(body_excerpt("  hello\r\n\tworld  \n") == "hello world");
    CHECK(body_excerpt(R"({"kind":"Status","message":"pods \"x\" is forbidden","code":403})") ==
          "pods \"x\" is forbidden");
    CHECK(body_excerpt(
              R"({"errors":[{"error_number":2017,"error":"Invalid job id specified","description":""}]})") ==
          "Invalid job id specified");
    CHECK(body_excerpt("{not json") == "{not json");
    const std::string cut = body_excerpt(std::string(300, 'x'));
    CHECK(cut == std::string(200, 'x') + "...");
    // 199 ASCII bytes then a 2-byte character straddling the limit: cut before it, not inside it.
    const std::string utf8 = body_excerpt(std::string(199, 'x') + "\xc3\xa9" + std::string(10, 'y'));
    CHECK(utf8 == std::string(199, 'x') + "...");
}

TEST_CASE("Retry-After takes seconds or an HTTP date") {
    const auto now = std::chrono::system_clock::from_time_t(1445412480); // Wed, 21 Oct 2015 07:28:00 GMT
    CHECK(parse_retry_after("7", now) == std::optional(std::chrono::milliseconds(7000)));
    CHECK(parse_retry_after(" 0 ", now) == std::optional(std::chrono::milliseconds(0)));
    CHECK(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now) ==
          std::optional(std::chrono::milliseconds(30000)));
    CHECK(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now) ==
          std::optional(std::chrono::milliseconds(0)));
    CHECK_FALSE(parse_retry_after("soon", now));
    CHECK_FALSE(parse_retry_after("", now));
}

TEST_CASE("backoff doubles from the base, is capped, and jitters within the upper half") {
    RetryPolicy p;
    CHECK(backoff_delay(p, 1, 0.0) == 100ms);
    CHECK(backoff_delay(p, 1, 0.999) <= 200ms);
    CHECK(backoff_delay(p, 2, 0.0) == 200ms);
    CHECK(backoff_delay(p, 3, 0.5) == 600ms);
    CHECK(backoff_delay(p, 30, 0.99) <= p.max_delay);
    CHECK(backoff_delay(p, 30, 0.0) == p.max_delay / 2);
}

TEST_CASE("retry_delay retries only transient failures, and only when safe") {
    RetryPolicy p;
    HttpRequest get;
    get.idempotent = true;
    HttpRequest post;
    post.method = "POST";
    const AttemptFailure busy{Error{ErrorKind::unavailable, "busy", {}}, true, false, std::nullopt};
    const AttemptFailure refused{Error{ErrorKind::unavailable, "refused", {}}, false, false, std::nullopt};
    const AttemptFailure denied{Error{ErrorKind::unauthorized, "no", {}}, true, false, std::nullopt};
    const AttemptFailure mid_stream{Error{ErrorKind::unavailable, "reset", {}}, true, true, std::nullopt};
    AttemptFailure throttled = busy;
    throttled.retry_after = 3s;

    CHECK(retry_delay(p, get, busy, 1, 0.0));
    CHECK_FALSE(retry_delay(p, get, busy, 3, 0.0)); // max_attempts reached
    CHECK_FALSE(retry_delay(p, post, busy, 1, 0.0));
    CHECK(retry_delay(p, post, refused, 1, 0.0));
    CHECK_FALSE(retry_delay(p, get, denied, 1, 0.0));
    CHECK_FALSE(retry_delay(p, get, mid_stream, 1, 0.0));
    CHECK(retry_delay(p, get, throttled, 1, 0.0) == std::optional(std::chrono::milliseconds(3000)));
    throttled.retry_after = 60s;
    CHECK_FALSE(retry_delay(p, get, throttled, 1, 0.0));
}

TEST_CASE("status_error redacts the body before cutting it") {
    HttpRequest req;
    req.url = "https://slurm.example:6820/slurm/v0.0.40/jobs?x=1";
    const std::string secret = "0123456789abcdef0123456789";
    // The secret straddles the 200-character cut: redacting after cutting would leave its first half.
    const std::string body = std::string(190, '.') + secret;
    const Error e = status_error(req, 500, "", body, {secret});
    CHECK(e.kind == ErrorKind::unavailable);
    CHECK_THAT(e.message,
               Catch::StartsWith("slurm.example:6820 answered HTTP 500 Internal Server Error to GET "
                                 "/slurm/v0.0.40/jobs: "));
    CHECK_THAT(e.message, !Catch::Contains("0123456789"));
}

TEST_CASE("final_error counts attempts and redacts message and hint") {
    const AttemptFailure f{
        Error{ErrorKind::timeout, "host:1 did not answer token-xyz", "use token-xyz\nagain"}, true, false,
        std::nullopt};
    const Error e = final_error(RetryPolicy{}, f, 3, {"token-xyz"});
    CHECK(e.kind == ErrorKind::timeout);
    CHECK(e.message == "host:1 did not answer <redacted> (after 3 attempts)");
    CHECK(e.hint == "use <redacted> again");
}

TEST_CASE("no compressed answer is asked of a server on this machine") {
    using tandem::net::detail::loopback_url;
    for (const char* url : {"https://127.0.0.1:6443/api", "http://localhost:6820/slurm",
                            "https://[::1]:6443/x", "http://127.1.2.3/", "https://user@127.0.0.1:6443"}) {
        INFO(url);
        CHECK(loopback_url(url));
    }
    for (const char* url : {"https://10.0.0.1:6443/api", "https://k8s.example.com/127.0.0.1",
                            "https://127.example.com/", "https://localhost.example.com:6443", "127.0.0.1"}) {
        INFO(url);
        CHECK_FALSE(loopback_url(url));
    }
}

TEST_CASE("next_attempt_timeout keeps every attempt of a request within twice its timeout") {
    using ms = std::chrono::milliseconds;
    CHECK(next_attempt_timeout(2000ms, 0ms) == std::optional(ms(2000)));
    CHECK(next_attempt_timeout(2000ms, 1500ms) == std::optional(ms(2000))); // 2500 left: a whole attempt
    CHECK(next_attempt_timeout(2000ms, 2150ms) == std::optional(ms(1850))); // after a first timeout
    CHECK(next_attempt_timeout(2000ms, 3500ms) == std::optional(ms(500)));  // a quarter: still worth it
    CHECK_FALSE(next_attempt_timeout(2000ms, 3600ms));                      // under a quarter left
    CHECK_FALSE(next_attempt_timeout(2000ms, 100'000ms));                   // a long Retry-After
    CHECK(next_attempt_timeout(0ms, 100'000ms) == std::optional(ms(0)));    // a stream: no budget
}

TEST_CASE("a body over max_body_bytes is a one-line remote error naming the limit") {
    HttpRequest req;
    req.url = "http://slurm.example:6820/slurm/v0.0.38/jobs?update_time=1";
    req.max_body_bytes = 1000;
    CHECK_FALSE(body_over_limit(req, 1000));
    CHECK(body_over_limit(req, 1001));
    CHECK(body_over_limit(req, 0, 5000));
    CHECK_FALSE(body_over_limit(req, 0, 1000));
    const AttemptFailure announced = body_too_large(req, 5000);
    CHECK(announced.error.kind == ErrorKind::remote);
    CHECK_FALSE(is_retryable(announced.error.kind));
    CHECK(announced.error.message == "slurm.example:6820 answered GET /slurm/v0.0.38/jobs with a body of "
                                     "5000 bytes, over the 1000 bytes tandem reads");
    req.max_body_bytes = k_default_max_body;
    CHECK(body_too_large(req, std::nullopt).error.message ==
          "slurm.example:6820 answered GET /slurm/v0.0.38/jobs with a body over the 128 MiB tandem reads");
}
