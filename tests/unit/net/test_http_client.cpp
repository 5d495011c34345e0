// CurlHttpClient (both transports) against a scripted loopback server: requests arrive intact, failures are
// classified with one-line redacted messages, retries follow the policy, streams are incremental, and
// sequential requests share one connection.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>

#include "net/http_client.hpp"
#include "test_server.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace tandem::net::testing;
using namespace std::chrono_literals;

namespace {

const Error& error_of(const Result<HttpResponse>& r) {
    REQUIRE_FALSE(r);
    return r.error();
}

// A port nobody listens on: bound, never listened, then closed.
int closed_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    ::close(fd);
    return ntohs(addr.sin_port);
}

} // namespace

TEST_CASE("GET sends headers and returns status, lowercased headers and the exact body") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    const std::string body("line one\nline two\0binary", 24);
    server.then(reply(200, body, {{"X-Reply-Header", "Yes"}, {"Content-Type", "text/plain"}}));
    CurlHttpClient client({}, {}, transport);
    auto req = get(server.url("/api/v1/things?limit=5"));
    req.headers = {{"X-Custom", "value with spaces"}, {"Accept", "application/json"}};
    auto res = client.request(req);
    INFO((res ? "" : res.error().message));
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body == body);
    CHECK(res->header("x-reply-header") == "Yes");
    CHECK(res->header("X-REPLY-HEADER") == "Yes");
    CHECK(std::any_of(res->headers.begin(), res->headers.end(),
                      [](auto& h) { return h.first == "content-type"; }));
    const auto got = server.requests();
    REQUIRE(got.size() == 1);
    CHECK(got[0].method == "GET");
    CHECK(got[0].target == "/api/v1/things?limit=5");
    CHECK(got[0].header("x-custom") == "value with spaces");
    CHECK(got[0].header("accept") == "application/json");
    CHECK(got[0].body.empty());
}

TEST_CASE("POST, PUT, PATCH and DELETE carry their method, content type and body") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    const std::string json =
        R"({"job":{"name":"train","environment":{"A":"1"}},"script":"#!/bin/bash\necho hi\n"})";
    for (int i = 0; i < 4; ++i) {
        server.then(reply(200, R"({"ok":true})", {{"Content-Type", "application/json"}}));
    }
    CurlHttpClient client({}, {}, transport);
    for (std::string method : {"POST", "PUT", "PATCH", "DELETE"}) {
        HttpRequest req;
        req.method = method;
        req.url = server.url("/slurm/v0.0.38/job/submit");
        req.content_type = method == "PATCH" ? "application/merge-patch+json" : "application/json";
        req.body = method == "DELETE" ? "" : json;
        auto res = client.request(req);
        INFO(method << ": " << (res ? "" : res.error().message));
        REQUIRE(res);
        CHECK(res->body == R"({"ok":true})");
    }
    const auto got = server.requests();
    REQUIRE(got.size() == 4);
    CHECK(got[0].method == "POST");
    CHECK(got[0].body == json);
    CHECK(got[0].header("content-type") == "application/json");
    CHECK(got[0].header("content-length") == std::to_string(json.size()));
    CHECK_FALSE(got[0].header("expect"));
    CHECK(got[1].method == "PUT");
    CHECK(got[1].body == json);
    CHECK(got[2].method == "PATCH");
    CHECK(got[2].header("content-type") == "application/merge-patch+json");
    CHECK(got[3].method == "DELETE");
    CHECK(got[3].body.empty());
}

TEST_CASE("header values are trimmed, and a line break inside one is refused without showing it") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(reply(200, "ok"));
    CurlHttpClient client({}, {}, transport);
    auto req = get(server.url("/x"));
    req.headers = {{"Authorization", "Bearer token-from-file\n"}};
    REQUIRE(client.request(req));
    REQUIRE(server.requests().size() == 1);
    CHECK(server.requests()[0].header("authorization") == "Bearer token-from-file");

    req.headers = {{"Authorization", "Bearer evil-secret\r\nX-Injected: 1"}};
    const auto res = client.request(req);
    const Error& e = error_of(res);
    CHECK(e.kind == ErrorKind::config);
    CHECK_THAT(e.message, Catch::Contains("'Authorization'") && !Catch::Contains("evil-secret"));
    CHECK(server.requests().size() == 1); // nothing sent
}

TEST_CASE("401 is unauthorized, names host:port and never shows a credential") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    const std::string token = "eyJhbGciOiJIUzI1NiJ9.slurm-jwt-secret";
    const std::string bearer = "k8s-bearer-secret-123";
    server.then(reply(401, "{\"errors\":[{\"error\":\"invalid token " + token +
                               "\"}]}\n"
                               "Authorization: Bearer " +
                               bearer + "\n"));
    std::vector<std::string> debug_lines;
    CurlHttpClient client({}, {}, transport);
    client.set_debug_sink([&](std::string_view line) { debug_lines.emplace_back(line); });
    auto req = get(server.url("/slurm/v0.0.38/jobs?user_token=x"));
    req.headers = {{"X-SLURM-USER-NAME", "alice"},
                   {"X-SLURM-USER-TOKEN", token},
                   {"Authorization", "Bearer " + bearer},
                   {"Cookie", "session=cookie-secret-456"}};
    const auto res = client.request(req);
    const Error& e = error_of(res);
    CHECK(e.kind == ErrorKind::unauthorized);
    CHECK_THAT(e.message, Catch::Contains(server.host_port()));
    CHECK_THAT(e.message, Catch::Contains("401"));
    CHECK_THAT(e.message, Catch::Contains("invalid token <redacted>"));
    CHECK_THAT(e.message, !Catch::Contains("user_token")); // no query string
    CHECK(e.message.find('\n') == std::string::npos);
    CHECK_FALSE(e.hint.empty());
    REQUIRE_FALSE(debug_lines.empty());
    for (const std::string& text : {e.message, e.hint, debug_lines.front()}) {
        INFO(text);
        CHECK_THAT(text,
                   !Catch::Contains(token) && !Catch::Contains(bearer) && !Catch::Contains("cookie-secret"));
    }
    CHECK_THAT(debug_lines.front(), Catch::Contains("X-SLURM-USER-NAME: alice"));
    CHECK(server.requests().size() == 1); // not retryable
}

TEST_CASE("404 is not_found unless the caller passes it through") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(reply(404, R"({"kind":"Status","message":"jobs.batch \"train\" not found","code":404})"));
    server.then(reply(404, "gone"));
    CurlHttpClient client({}, {}, transport);
    const auto res = client.request(get(server.url("/apis/batch/v1/namespaces/ns/jobs/train")));
    const Error& e = error_of(res);
    CHECK(e.kind == ErrorKind::not_found);
    CHECK_THAT(e.message, Catch::Contains("jobs.batch \"train\" not found"));
    CHECK_THAT(e.message, Catch::Contains("GET /apis/batch/v1/namespaces/ns/jobs/train"));

    auto req = get(server.url("/again"));
    req.pass_statuses = {404};
    const auto passed = client.request(req);
    REQUIRE(passed);
    CHECK(passed->status == 404);
    CHECK(passed->body == "gone");
}

TEST_CASE("503 is retried with backoff for idempotent requests only") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Sleeps sleeps;
    CurlHttpClient client({}, sleeps.policy(), transport);

    SECTION("idempotent GET: 503 then 200 succeeds") {
        server.then(reply(503, "busy"));
        server.then(reply(200, "fine"));
        const auto res = client.request(get(server.url("/jobs")));
        REQUIRE(res);
        CHECK(res->body == "fine");
        CHECK(server.requests().size() == 2);
        REQUIRE(sleeps.calls.size() == 1);
        CHECK(sleeps.calls[0] >= 100ms);
        CHECK(sleeps.calls[0] <= 200ms);
    }
    SECTION("non-idempotent POST: 503 is returned at once") {
        server.then(reply(503, "busy"));
        server.then(reply(200, "would be a second submission"));
        HttpRequest req = get(server.url("/job/submit"), false);
        req.method = "POST";
        req.body = "{}";
        const auto res = client.request(req);
        CHECK(error_of(res).kind == ErrorKind::unavailable);
        CHECK(server.requests().size() == 1);
        CHECK(sleeps.calls.empty());
    }
    SECTION("gives up after max_attempts with growing delays") {
        for (int i = 0; i < 3; ++i) {
            server.then(reply(500, "boom"));
        }
        const auto res = client.request(get(server.url("/jobs")));
        const Error& e = error_of(res);
        CHECK(e.kind == ErrorKind::unavailable);
        CHECK_THAT(e.message, Catch::Contains("HTTP 500") && Catch::Contains("(after 3 attempts)"));
        CHECK(server.requests().size() == 3);
        REQUIRE(sleeps.calls.size() == 2);
        CHECK(sleeps.calls[1] >= 200ms);
        CHECK(sleeps.calls[1] <= 400ms);
    }
}

TEST_CASE("429 Retry-After is honoured up to the cap") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Sleeps sleeps;
    CurlHttpClient client({}, sleeps.policy(), transport);

    SECTION("within the cap: waits exactly as asked") {
        server.then(reply(429, "slow down", {{"Retry-After", "7"}}));
        server.then(reply(200, "ok"));
        REQUIRE(client.request(get(server.url("/x"))));
        REQUIRE(sleeps.calls.size() == 1);
        CHECK(sleeps.calls[0] == 7000ms);
    }
    SECTION("beyond the cap: gives up at once and says why") {
        server.then(reply(429, "slow down", {{"Retry-After", "3600"}}));
        const auto res = client.request(get(server.url("/x")));
        CHECK(error_of(res).kind == ErrorKind::unavailable);
        CHECK_THAT(res.error().message, Catch::Contains("retry after 3600 s"));
        CHECK(sleeps.calls.empty());
        CHECK(server.requests().size() == 1);
    }
}

TEST_CASE("connection refused is unavailable and retried even for a POST") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    Sleeps sleeps;
    CurlHttpClient client({}, sleeps.policy(), transport);
    const int port = closed_port();
    HttpRequest req = get("http://127.0.0.1:" + std::to_string(port) + "/job/submit", false);
    req.method = "POST";
    const auto res = client.request(req);
    const Error& e = error_of(res);
    CHECK(e.kind == ErrorKind::unavailable);
    CHECK_THAT(e.message, Catch::Contains("127.0.0.1:" + std::to_string(port)));
    CHECK(sleeps.calls.size() == 2); // never sent, so safe to repeat
}

TEST_CASE("a server that never answers times out within the configured timeout") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Sleeps sleeps;
    CurlHttpClient client({}, sleeps.policy(), transport);

    SECTION("non-idempotent: one attempt") {
        server.then(never_answer());
        HttpRequest req = get(server.url("/job/submit"), false);
        req.method = "POST";
        req.body = "{}";
        req.timeout = 300ms;
        const auto start = std::chrono::steady_clock::now();
        const auto res = client.request(req);
        const auto took = std::chrono::steady_clock::now() - start;
        const Error& e = error_of(res);
        CHECK(e.kind == ErrorKind::timeout);
        CHECK_THAT(e.message, Catch::Contains(server.host_port()) && Catch::Contains("300 ms"));
        CHECK(took >= 250ms);
        CHECK(took < 2s);
        CHECK(sleeps.calls.empty()); // it was sent: not repeated
    }
    SECTION("idempotent: retried on a fresh connection") {
        server.then(never_answer());
        server.then(reply(200, "late but fine"));
        auto req = get(server.url("/jobs"));
        req.timeout = 300ms;
        const auto res = client.request(req);
        REQUIRE(res);
        CHECK(res->body == "late but fine");
        CHECK(sleeps.calls.size() == 1);
        CHECK(server.connections_accepted() == 2);
    }
}

TEST_CASE("three sequential requests reuse one connection") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    for (int i = 0; i < 3; ++i) {
        server.then(reply(200, "r" + std::to_string(i)));
    }
    CurlHttpClient client({}, {}, transport);
    for (int i = 0; i < 3; ++i) {
        const auto res = client.request(get(server.url("/ping")));
        REQUIRE(res);
        CHECK(res->body == "r" + std::to_string(i));
    }
    CHECK(client.connections_opened() == 1);
    CHECK(server.connections_accepted() == 1);
    const auto got = server.requests();
    REQUIRE(got.size() == 3);
    CHECK(got[2].connection == 1);
}

TEST_CASE("a long error body is cut to one short line") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(reply(400, std::string(150, 'a') + "\r\n\t" + std::string(5000, 'b')));
    CurlHttpClient client({}, {}, transport);
    const auto res = client.request(get(server.url("/x")));
    const Error& e = error_of(res);
    CHECK(e.kind == ErrorKind::remote);
    CHECK(e.message.find('\n') == std::string::npos);
    CHECK(e.message.find('\r') == std::string::npos);
    CHECK(e.message.size() < 320);
    CHECK_THAT(e.message, Catch::EndsWith("..."));
}

TEST_CASE("an answer over max_body_bytes is refused, announced or not, and not retried") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Sleeps sleeps;
    CurlHttpClient client({}, sleeps.policy(), transport);
    auto req = get(server.url("/jobs"));
    req.max_body_bytes = 1000;

    SECTION("announced by Content-Length") {
        server.then(reply(200, std::string(5000, 'x')));
        const auto res = client.request(req);
        const Error& e = error_of(res);
        CHECK(e.kind == ErrorKind::remote);
        const std::string said = " answered GET /jobs with a body of 5000 bytes, over the 1000 bytes "
                                 "tandem reads";
        CHECK(e.message == server.host_port() + said);
    }
    SECTION("read until the server closes") {
        server.then([](Connection& conn, const RecordedRequest&) {
            conn.send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + std::string(5000, 'x'));
            conn.close_after_response();
        });
        const auto res = client.request(req);
        const Error& e = error_of(res);
        CHECK(e.kind == ErrorKind::remote);
        CHECK_THAT(e.message, Catch::Contains("with a body over the 1000 bytes tandem reads"));
    }
    SECTION("at the limit it is delivered") {
        server.then(reply(200, std::string(1000, 'x')));
        const auto res = client.request(req);
        REQUIRE(res);
        CHECK(res->body.size() == 1000);
    }
    CHECK(server.requests().size() == 1);
    CHECK(sleeps.calls.empty());
}

TEST_CASE("an error answer is read only as far as its message needs") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    // Claims 100 MB, sends 200 KB of it, then holds the connection: the status is known long before.
    server.then([](Connection& conn, const RecordedRequest&) {
        conn.send("HTTP/1.1 400 Bad Request\r\nContent-Length: 100000000\r\n\r\nno such partition " +
                  std::string(200 * 1024, 'x'));
        conn.wait_for_close();
    });
    CurlHttpClient client({}, {}, transport);
    auto req = get(server.url("/job/submit"), false);
    req.method = "POST";
    req.body = "{}";
    req.timeout = 5s;
    const auto start = std::chrono::steady_clock::now();
    const auto res = client.request(req);
        const Error& e = error_of(res);
    CHECK(std::chrono::steady_clock::now() - start < 2s);
    CHECK(e.kind == ErrorKind::remote);
    CHECK_THAT(e.message, Catch::Contains("HTTP 400") && Catch::Contains("no such partition"));
}

TEST_CASE("the attempts of a request that is never answered end within twice its timeout") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    for (int i = 0; i < 3; ++i) {
        server.then(never_answer());
    }
    CurlHttpClient client({}, {}, transport); // real sleeps between attempts
    auto req = get(server.url("/jobs"));
    req.timeout = 400ms;
    const auto start = std::chrono::steady_clock::now();
    const auto res = client.request(req);
        const Error& e = error_of(res);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(e.kind == ErrorKind::timeout);
    CHECK_THAT(e.message, Catch::Contains("(after 2 attempts)"));
    CHECK(server.requests().size() == 2); // a third attempt would not fit in the budget
    CHECK(took >= 700ms);
    CHECK(took < 1400ms); // a third attempt would take it past 1.6 s
}
