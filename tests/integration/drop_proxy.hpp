#pragma once
// A loopback HTTP/1.1 proxy that forwards to a real server and can lose one answer on purpose: it sends
// the request of the first exchange matching a prefix upstream, reads the server's answer, and then
// closes the client's connection without passing it on. That is a dropped connection after the
// server acted, the case where a naive retry makes a second job.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tandem_test {

class DropProxy {
public:
    // Forwards to 127.0.0.1:upstream_port; drops the answer to the first request whose first line starts
    // with `drop_prefix` (e.g. "POST /slurm/v0.0.38/job/submit").
    DropProxy(int upstream_port, std::string drop_prefix);
    ~DropProxy();
    DropProxy(const DropProxy&) = delete;
    DropProxy& operator=(const DropProxy&) = delete;

    int port() const { return m_port; }
    int dropped() const { return m_dropped.load(); }

private:
    void serve(int client);

    int m_upstream_port;
    std::string m_drop_prefix;
    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_dropped{0};
    std::thread m_acceptor;
    std::vector<std::thread> m_workers;
};

} // namespace tandem_test
