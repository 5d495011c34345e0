// CurlHttpClient::stream (both transports) against the loopback server: pieces arrive as the server sends
// them, the consumer can stop the stream, and refused streams are classified like plain requests.

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "net/http_client.hpp"
#include "test_server.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace tandem::net::testing;
using namespace std::chrono_literals;

namespace {

// A flag one thread raises and another waits for, with a limit so a broken client cannot hang the test.
class Flag {
public:
    void raise() {
        std::lock_guard lock(m_mutex);
        m_up = true;
        m_cv.notify_all();
    }
    bool wait(std::chrono::milliseconds limit) {
        std::unique_lock lock(m_mutex);
        return m_cv.wait_for(lock, limit, [this] { return m_up; });
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_up = false;
};

HttpRequest follow(const std::string& url) {
    HttpRequest r;
    r.url = url;
    r.timeout = 0ms; // a follow has no total limit
    r.idempotent = true;
    return r;
}

} // namespace

TEST_CASE("stream delivers each chunk as it arrives") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Flag first_received;
    std::atomic<bool> first_seen_before_second{false};
    server.then([&](Connection& conn, const RecordedRequest&) {
        conn.send(chunked_head() + chunk("first line\n"));
        first_seen_before_second =
            first_received.wait(5s); // hold the second back until the client has the first
        conn.send(chunk("second line\n") + chunk(""));
    });
    CurlHttpClient client({}, {}, transport);
    std::vector<std::string> chunks;
    HttpResponse head;
    const auto status = client.stream(
        follow(server.url("/api/v1/namespaces/ns/pods/p/log?follow=true")),
        [&](std::string_view piece) {
            chunks.emplace_back(piece);
            if (chunks.size() == 1) {
                CHECK(head.status == 200); // the head is filled before the first piece
                first_received.raise();
            }
            return true;
        },
        &head);
    INFO((status ? "" : status.error().message));
    REQUIRE(status);
    CHECK(first_seen_before_second);
    REQUIRE(chunks.size() == 2);
    CHECK(chunks[0] == "first line\n");
    CHECK(chunks[1] == "second line\n");
    CHECK(head.header("content-type") == "text/plain");
    CHECK(head.body.empty());
}

TEST_CASE("stream ends cleanly when the consumer returns false") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    std::atomic<bool> peer_gone{false};
    server.then([&](Connection& conn, const RecordedRequest&) {
        conn.send(chunked_head());
        for (int i = 0; i < 100; ++i) { // an endless watch, about 5 s unless the client leaves
            if (!conn.send(chunk("{\"type\":\"MODIFIED\"}\n"))) {
                peer_gone = true;
                break;
            }
            std::this_thread::sleep_for(50ms);
        }
        conn.close_after_response();
    });
    CurlHttpClient client({}, {}, transport);
    int calls = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto status = client.stream(
        follow(server.url("/apis/batch/v1/jobs?watch=true")),
        [&](std::string_view piece) {
            ++calls;
            CHECK(piece == "{\"type\":\"MODIFIED\"}\n");
            return false;
        },
        nullptr);
    REQUIRE(status);
    CHECK(calls == 1);
    CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("a refused stream is an error with the status and body, and is not delivered") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(reply(401, R"({"kind":"Status","message":"Unauthorized"})"));
    CurlHttpClient client({}, {}, transport);
    int calls = 0;
    HttpResponse head;
    const auto status = client.stream(
        follow(server.url("/log")),
        [&](std::string_view) {
            ++calls;
            return true;
        },
        &head);
    REQUIRE_FALSE(status);
    CHECK(status.error().kind == ErrorKind::unauthorized);
    CHECK_THAT(status.error().message, Catch::Contains("HTTP 401") && Catch::Contains(server.host_port()));
    CHECK(calls == 0);
    CHECK(head.status == 401);
}

TEST_CASE("a consumer that throws becomes an internal error, not an exception") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(
        [](Connection& conn, const RecordedRequest&) { conn.send(chunked_head() + chunk("x") + chunk("")); });
    CurlHttpClient client({}, {}, transport);
    const auto status = client.stream(
        follow(server.url("/log")),
        [](std::string_view) -> bool { throw std::runtime_error("parse failed"); }, nullptr);
    REQUIRE_FALSE(status);
    CHECK(status.error().kind == ErrorKind::internal);
    CHECK_THAT(status.error().message, Catch::Contains("parse failed"));
    CHECK(server.requests().size() == 1); // data was delivered: never retried
}

TEST_CASE("a stream in progress does not block other requests on the same client") {
    // plain http:// through tandem's own exchange, then through libcurl
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Flag other_done;
    std::atomic<bool> released_by_other{false};
    server.then([&](Connection& conn, const RecordedRequest&) {
        conn.send(chunked_head() + chunk("waiting\n"));
        released_by_other = other_done.wait(5s);
        conn.send(chunk(""));
    });
    server.then(reply(200, "meanwhile"));
    CurlHttpClient client({}, {}, transport);
    std::thread other;
    std::optional<Result<HttpResponse>> other_result; // checked on this thread: Catch2 is not thread-safe
    const auto status = client.stream(
        follow(server.url("/log")),
        [&](std::string_view) {
            other = std::thread([&] {
                other_result = client.request(follow(server.url("/jobs")));
                other_done.raise();
            });
            return true;
        },
        nullptr);
    other.join();
    REQUIRE(status);
    CHECK(released_by_other);
    REQUIRE(other_result);
    REQUIRE(*other_result);
    CHECK((*other_result)->body == "meanwhile");
    CHECK(client.connections_opened() == 2);
}
