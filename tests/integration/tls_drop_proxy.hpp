#pragma once
// A loopback TCP proxy for TLS connections that loses one answer on purpose. It cannot read the
// encrypted requests, so it recognises the one to drop by size: the first burst of client bytes larger
// than `min_request_bytes` (a Job manifest, padded by the test, against GETs of a few hundred bytes) is
// passed to the server, the server's answer is read, and the client's connection is closed without it.
// The server acted; the client never hears of it. TLS itself passes through untouched, so the server's
// certificate must still verify for 127.0.0.1.

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace tandem_test {

class TlsDropProxy {
public:
    TlsDropProxy(int upstream_port, std::size_t min_request_bytes);
    ~TlsDropProxy();
    TlsDropProxy(const TlsDropProxy&) = delete;
    TlsDropProxy& operator=(const TlsDropProxy&) = delete;

    int port() const { return m_port; }
    int dropped() const { return m_dropped.load(); }
    int connections() const { return m_connections.load(); }

private:
    void serve(int client);

    int m_upstream_port;
    std::size_t m_min_request_bytes;
    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_dropped{0};
    std::atomic<int> m_connections{0};
    std::thread m_acceptor;
    std::vector<std::thread> m_workers;
};

} // namespace tandem_test
