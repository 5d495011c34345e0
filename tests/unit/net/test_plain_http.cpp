// The plain HTTP/1.1 exchange (net/plain_http.hpp) on the answers libcurl copes with and slurmrestd or a
// proxy in front of it may give: chunked and read-to-close bodies, 1xx answers, kept connections the
// server closed, answers cut short. Where libcurl must behave alike, the case runs through both.

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "net/http_client.hpp"
#include "net/plain_http.hpp"
#include "test_server.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace tandem::net::testing;
using namespace std::chrono_literals;

namespace {

Responder raw(std::string bytes, bool close_after = false) {
    return [bytes = std::move(bytes), close_after](Connection& conn, const RecordedRequest&) {
        conn.send(bytes);
        if (close_after) {
            conn.close_after_response();
        }
    };
}

// Sets an environment variable for one scope.
class EnvVar {
public:
    EnvVar(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) {
            m_old = old;
        }
        if (value != nullptr) {
            ::setenv(name, value, 1);
        } else {
            ::unsetenv(name);
        }
    }
    ~EnvVar() {
        if (m_old) {
            ::setenv(m_name, m_old->c_str(), 1);
        } else {
            ::unsetenv(m_name);
        }
    }
    EnvVar(const EnvVar&) = delete;
    EnvVar& operator=(const EnvVar&) = delete;

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

} // namespace

TEST_CASE("plain http: which URLs take it, and a proxy in the environment sends them to libcurl") {
    EnvVar a("http_proxy", nullptr), b("all_proxy", nullptr), c("ALL_PROXY", nullptr), d("no_proxy", nullptr),
        e("NO_PROXY", nullptr);
    CHECK(detail::plain_http_usable("http://127.0.0.1:6820/slurm/v0.0.38/jobs"));
    CHECK(detail::plain_http_usable("HTTP://login01.cluster.example/slurm/v0.0.38/jobs?update_time=5"));
    CHECK(detail::plain_http_usable("http://[::1]:6820"));
    CHECK_FALSE(detail::plain_http_usable("https://127.0.0.1:6443/api"));
    CHECK_FALSE(detail::plain_http_usable("http://user:secret@127.0.0.1:6820/"));
    CHECK_FALSE(detail::plain_http_usable("http://127.0.0.1:68x0/"));
    CHECK_FALSE(detail::plain_http_usable("http:///jobs"));
    CHECK_FALSE(detail::plain_http_usable("http://127.0.0.1/a path"));
    CHECK(needs_libcurl("https://k8s.example:6443"));
    CHECK_FALSE(needs_libcurl("http://127.0.0.1:6820"));
    {
        EnvVar proxy("http_proxy", "http://proxy.example:3128");
        CHECK_FALSE(detail::plain_http_usable("http://127.0.0.1:6820/"));
        EnvVar everything("no_proxy", "*");
        CHECK(detail::plain_http_usable("http://127.0.0.1:6820/"));
    }
    {
        EnvVar proxy("ALL_PROXY", "socks5://proxy.example:1080");
        CHECK_FALSE(detail::plain_http_usable("http://127.0.0.1:6820/"));
    }
    {
        EnvVar ignored("HTTP_PROXY", "http://proxy.example:3128"); // curl ignores it too (httpoxy)
        CHECK(detail::plain_http_usable("http://127.0.0.1:6820/"));
    }
}

TEST_CASE("plain http: the request line, Host and headers are what a server expects") {
    TestServer server;
    server.then(reply(200, "ok"));
    CurlHttpClient client;
    HttpRequest req = get(server.url("?update_time=7"));
    req.method = "POST";
    req.body = "{}";
    req.content_type = "application/json";
    req.headers = {{"X-SLURM-USER-NAME", "alice"}, {"Accept", "application/json"}};
    REQUIRE(client.request(req));
    const auto got = server.requests();
    REQUIRE(got.size() == 1);
    CHECK(got[0].target == "/?update_time=7");
    CHECK(got[0].header("host") == server.host_port());
    CHECK(got[0].header("accept") == "application/json"); // the caller's, not a second one
    CHECK(got[0].header("content-length") == "2");
    CHECK(got[0].header("content-type") == "application/json");
    CHECK(got[0].header("x-slurm-user-name") == "alice");
    CHECK(got[0].raw.find("Accept: */*") == std::string::npos);
}

TEST_CASE("plain http: a chunked answer is collected whole, extensions and trailers skipped") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(
        raw(chunked_head() + "5;ext=1\r\nhello\r\n" + chunk(", world") + "0\r\nX-Trailer: t\r\n\r\n"));
    server.then(reply(200, "again"));
    CurlHttpClient client({}, {}, transport);
    const auto first = client.request(get(server.url("/a")));
    REQUIRE(first);
    CHECK(first->body == "hello, world");
    const auto second = client.request(get(server.url("/b")));
    REQUIRE(second);
    CHECK(second->body == "again");
    CHECK(server.connections_accepted() == 1);
}

TEST_CASE("plain http: an answer without a length ends when the server closes, and is not reused") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(raw("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", true));
    server.then(reply(200, "next"));
    CurlHttpClient client({}, {}, transport);
    const auto first = client.request(get(server.url("/a")));
    REQUIRE(first);
    CHECK(first->body == "all of it");
    const auto second = client.request(get(server.url("/b")));
    REQUIRE(second);
    CHECK(second->body == "next");
    CHECK(server.connections_accepted() == 2);
}

TEST_CASE("plain http: 100 Continue is skipped and the real answer returned") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(
        raw("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\nX-A: b\r\n\r\ndone"));
    CurlHttpClient client({}, {}, transport);
    HttpRequest req = get(server.url("/job/submit"), false);
    req.method = "POST";
    req.body = "{}";
    const auto res = client.request(req);
    REQUIRE(res);
    CHECK(res->status == 201);
    CHECK(res->body == "done");
    CHECK(res->header("x-a") == "b");
}

TEST_CASE("plain http: a kept connection the server closed is replaced at once for a GET") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    Sleeps sleeps;
    server.then([](Connection& conn, const RecordedRequest& r) {
        reply(200, "first")(conn, r);
        conn.close_after_response(); // no Connection: close: the client keeps it
    });
    server.then(reply(200, "second"));
    CurlHttpClient client({}, sleeps.policy(), transport);
    REQUIRE(client.request(get(server.url("/a"))));
    std::this_thread::sleep_for(50ms); // the server's close reaches the client's socket
    const auto res = client.request(get(server.url("/b")));
    REQUIRE(res);
    CHECK(res->body == "second");
    CHECK(sleeps.calls.empty()); // not a retry: the request never reached a server
    CHECK(server.connections_accepted() == 2);
}

TEST_CASE("plain http: a request that must not be repeated never rides a kept connection") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(reply(200, "listed"));
    server.then(reply(200, "submitted"));
    CurlHttpClient client({}, {}, transport);
    REQUIRE(client.request(get(server.url("/jobs"))));
    HttpRequest submit = get(server.url("/job/submit"), false);
    submit.method = "POST";
    submit.body = "{}";
    REQUIRE(client.request(submit));
    const auto got = server.requests();
    REQUIRE(got.size() == 2);
    CHECK(got[1].connection == 2);
}

TEST_CASE("plain http: an answer cut short is a broken connection, not a short body") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    server.then(raw("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b", true));
    CurlHttpClient client({}, {}, transport);
    const auto res = client.request(get(server.url("/jobs"), false));
    REQUIRE_FALSE(res);
    CHECK(res.error().kind == ErrorKind::unavailable);
    CHECK_THAT(res.error().message,
               Catch::Contains("connection to " + server.host_port() + " broke during GET /jobs"));
}

TEST_CASE("plain http: a server that does not speak HTTP is a one-line remote error") {
    TestServer server;
    server.then(raw("SSH-2.0-OpenSSH_9.2\r\n\r\n", true));
    CurlHttpClient client;
    const auto res = client.request(get(server.url("/jobs"), false));
    REQUIRE_FALSE(res);
    CHECK(res.error().kind == ErrorKind::remote);
    CHECK(res.error().message ==
          server.host_port() + " sent an unreadable answer to GET /jobs: not an HTTP/1.x status line");
}

TEST_CASE("plain http: HEAD and 204 have no body and keep the connection") {
    TestServer server;
    server.then(raw("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n"));
    server.then(raw("HTTP/1.1 204 No Content\r\n\r\n"));
    server.then(reply(200, "third"));
    CurlHttpClient client;
    HttpRequest head = get(server.url("/h"));
    head.method = "HEAD";
    const auto h = client.request(head);
    REQUIRE(h);
    CHECK(h->header("content-length") == "12");
    CHECK(h->body.empty());
    HttpRequest del = get(server.url("/d"));
    del.method = "DELETE";
    REQUIRE(client.request(del));
    const auto third = client.request(get(server.url("/t")));
    REQUIRE(third);
    CHECK(third->body == "third");
    CHECK(server.connections_accepted() == 1);
}

TEST_CASE("plain http: many small chunks at once, and a chunk split across packets") {
    const HttpTransport transport = GENERATE(HttpTransport::automatic, HttpTransport::libcurl);
    CAPTURE(transport);
    TestServer server;
    std::string many = chunked_head();
    for (int i = 0; i < 2000; ++i) {
        many += chunk("abc");
    }
    server.then(raw(many + "0\r\n\r\n"));
    server.then([](Connection& conn, const RecordedRequest&) {
        for (std::string_view piece : {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1",
                                       "0\r\n0123456789ab", "cdef\r", "\n0\r\n", "\r\n"}) {
            conn.send(piece);
            std::this_thread::sleep_for(20ms);
        }
    });
    CurlHttpClient client({}, {}, transport);
    const auto first = client.request(get(server.url("/many")));
    REQUIRE(first);
    CHECK(first->body.size() == 6000);
    CHECK(first->body.substr(0, 6) == "abcabc");
    const auto second = client.request(get(server.url("/split")));
    REQUIRE(second);
    CHECK(second->body == "0123456789abcdef");
    CHECK(server.connections_accepted() == 1);
}
