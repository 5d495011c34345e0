#pragma once
// A loopback TCP relay for transport tests: forwards every connection to 127.0.0.1:upstream and can, on
// command, cut every relayed connection (both sides see the connection closed, as when a server
// process dies or a NAT forgets the flow) or freeze them (bytes stop moving but nothing is closed, as a
// silent network partition).

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem_test {

class TcpRelay {
public:
    explicit TcpRelay(int upstream_port);
    ~TcpRelay();
    TcpRelay(const TcpRelay&) = delete;
    TcpRelay& operator=(const TcpRelay&) = delete;

    int port() const { return m_port; }
    int accepted() const { return m_accepted.load(); }
    // Bytes relayed from clients to the server so far (what a client sent).
    std::uint64_t bytes_up() const { return m_bytes_up.load(); }
    void cut_all();                  // closes every current connection, both ways
    void freeze(bool frozen = true); // stops moving bytes on every connection, current and new
    // Closes the next `n` connections as soon as they are accepted, before any byte (as sshd does to
    // connections over its MaxStartups).
    void close_next(int n) { m_close_next = n; }

private:
    void serve(int client);

    int m_upstream_port;
    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_frozen{false};
    std::atomic<int> m_accepted{0};
    std::atomic<std::uint64_t> m_bytes_up{0};
    std::atomic<int> m_close_next{0};
    std::mutex m_mutex;
    std::vector<int> m_fds; // every open socket of every relayed connection
    std::thread m_acceptor;
    std::vector<std::thread> m_workers;
};

} // namespace tandem_test
