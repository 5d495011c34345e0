#pragma once
// A tiny scripted HTTP/1.1 server on 127.0.0.1 with an ephemeral port, for exercising the real libcurl
// client. Each request takes the next responder of the script (in arrival order, across connections);
// connections are kept alive until the client closes them, so connection reuse is observable. Every
// request is recorded raw and parsed.

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "net/http_client.hpp"

namespace tandem::net::testing {

struct RecordedRequest {
    std::string method;
    std::string target; // path and query as sent
    Headers headers;    // names lowercased
    std::string body;
    std::string raw;
    int connection = 0; // 1-based number of the connection it came on

    std::optional<std::string> header(std::string_view lower_name) const;
};

// What a responder can do with the connection a request arrived on.
class Connection {
public:
    Connection(int fd, const std::atomic<bool>& stopping) : m_fd(fd), m_stopping(stopping) {}

    bool send(std::string_view bytes); // false once the peer is gone
    // Blocks until the client closes the connection, the server stops, or the limit passes.
    void wait_for_close(std::chrono::milliseconds limit = std::chrono::seconds(10));
    void close_after_response() { m_close = true; }
    bool closing() const { return m_close; }

private:
    int m_fd;
    const std::atomic<bool>& m_stopping;
    bool m_close = false;
};

using Responder = std::function<void(Connection&, const RecordedRequest&)>;

class TestServer {
public:
    TestServer();
    ~TestServer();
    TestServer(const TestServer&) = delete;
    TestServer& operator=(const TestServer&) = delete;

    int port() const { return m_port; }
    std::string url(std::string_view path_and_query) const;
    std::string host_port() const { return "127.0.0.1:" + std::to_string(m_port); }

    void then(Responder responder); // appends to the script; unscripted requests get a 500
    std::vector<RecordedRequest> requests() const;
    int connections_accepted() const { return m_accepted.load(); }

private:
    void accept_loop();
    void serve(int fd, int number);
    Responder next_responder();

    int m_listen_fd = -1;
    int m_port = 0;
    std::atomic<bool> m_stopping{false};
    std::atomic<int> m_accepted{0};
    mutable std::mutex m_mutex;
    std::vector<Responder> m_script;
    std::size_t m_next = 0;
    std::vector<RecordedRequest> m_requests;
    std::vector<int> m_client_fds;
    std::vector<std::thread> m_workers;
    std::thread m_acceptor;
};

// Records the waits between attempts instead of sleeping.
struct Sleeps {
    std::vector<std::chrono::milliseconds> calls;
    RetryPolicy policy() {
        RetryPolicy p;
        p.sleep = [this](std::chrono::milliseconds d) { calls.push_back(d); };
        return p;
    }
};

// A GET of `url`.
inline HttpRequest get(const std::string& url, bool idempotent = true) {
    HttpRequest r;
    r.url = url;
    r.idempotent = idempotent;
    return r;
}

// A complete keep-alive response with Content-Length.
Responder reply(int status, std::string body = {}, Headers headers = {});
// Reads the request and never answers, until the client gives up and closes the connection.
Responder never_answer();
// Chunked transfer encoding: the response head, and one chunk (an empty payload is the last chunk).
std::string chunked_head(int status = 200);
std::string chunk(std::string_view payload);

} // namespace tandem::net::testing
