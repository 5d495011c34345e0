#pragma once
// A loopback HTTP/1.1 server that misbehaves on purpose, standing in for slurmrestd or a Kubernetes API
// server in the backend-fault scenarios (test_backend_faults.cpp). It listens on 127.0.0.1 with an
// ephemeral port; every connection gets a thread of its own that reads requests (keep-alive) and hands
// each to the current handler, which answers well or badly with the helpers below. Requests are logged
// (method, target, body) so a test can count what tandem sent, and in what order.
//
// The handler can be swapped at any time: a scenario first lets tandem record a job through a healthy
// exchange, then turns the server bad. A handler that holds a connection (never_answer, slowloris) returns
// when the client gives up or the server is destroyed; the destructor shuts every socket, so nothing it
// started outlives it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace tandem_test {

using namespace std::chrono_literals;

struct FaultRequest {
    std::string method;
    std::string target; // path and query as sent
    std::string body;
    std::chrono::steady_clock::time_point at;

    std::string path() const { return target.substr(0, target.find('?')); }
    std::string line() const { return method + " " + target; }
};

// The connection a request came on, as a handler sees it.
class FaultConnection {
public:
    FaultConnection(int fd, const std::atomic<bool>& stopping) : m_fd(fd), m_stopping(stopping) {}

    // false once the peer is gone or the server stops.
    bool send(std::string_view bytes);
    // Blocks until the client closes the connection or the server stops.
    void hold();
    // Ends the connection after this handler returns (no keep-alive).
    void close_after() { m_close = true; }
    bool closing() const { return m_close; }
    bool stopping() const { return m_stopping.load(); }

private:
    int m_fd;
    const std::atomic<bool>& m_stopping;
    bool m_close = false;
};

using FaultHandler = std::function<void(FaultConnection&, const FaultRequest&)>;
using FaultHeaders = std::vector<std::pair<std::string, std::string>>;

class FaultServer {
public:
    explicit FaultServer(FaultHandler handler);
    ~FaultServer();
    FaultServer(const FaultServer&) = delete;
    FaultServer& operator=(const FaultServer&) = delete;

    int port() const { return m_port; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

    void set_handler(FaultHandler handler);
    std::vector<FaultRequest> requests() const;
    void clear_requests();
    // Requests whose method is `method` (empty: any) and whose path starts with `path_prefix`.
    std::size_t count(std::string_view method, std::string_view path_prefix) const;
    int connections() const { return m_accepted.load(); }
    // The request lines seen so far, one per line (for INFO).
    std::string transcript() const;

private:
    void accept_loop();
    void serve(int fd);

    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stopping{false};
    std::atomic<int> m_accepted{0};
    mutable std::mutex m_mutex;
    FaultHandler m_handler;
    std::vector<FaultRequest> m_requests;
    std::vector<int> m_fds;
    std::vector<std::thread> m_workers;
    std::thread m_acceptor;
};

// --- What a handler can do ---

std::string reason_phrase(int status);
// A whole answer with Content-Length (keep-alive unless the connection is closing).
void reply(FaultConnection& c, int status, std::string_view body, const FaultHeaders& headers = {},
           std::string_view content_type = "application/json");
// Reads the request and never answers, until the client gives up.
void never_answer(FaultConnection& c);
// Claims `claimed` body bytes, sends `sent` of them (from `body`, padded with spaces), then closes.
void cut_body(FaultConnection& c, int status, std::string_view body, std::size_t claimed);
// 200 with a body of `bytes` that looks like the start of a JSON list (`{"items":[{...},{...},...`),
// streamed until the client stops reading or all is sent; announced by Content-Length, or not (the body
// then ends when the connection closes). Returns how many body bytes went out.
std::uint64_t huge_body(FaultConnection& c, std::uint64_t bytes, std::string_view list_key = "items",
                        bool announced = true);
// The whole `answer` (head and body), one byte every `interval`, until done or the client leaves.
// Returns how many bytes went out.
std::size_t slowloris(FaultConnection& c, std::string_view answer, std::chrono::milliseconds interval);
// A complete answer's bytes (for slowloris): head with Content-Length, then the body.
std::string answer_bytes(int status, std::string_view body, const FaultHeaders& headers = {});

} // namespace tandem_test
