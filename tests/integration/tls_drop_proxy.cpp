#include "tls_drop_proxy.hpp"

#include <poll.h>
#include <stdexcept>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace tandem_test {

namespace {

bool send_all(int fd, const char* data, std::size_t size) {
    std::size_t sent = 0;
    while (sent < size) {
        ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

int connect_to(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

} // namespace

TlsDropProxy::TlsDropProxy(int upstream_port, std::size_t min_request_bytes)
    : m_upstream_port(upstream_port), m_min_request_bytes(min_request_bytes) {
    m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listen, 16) != 0) {
        throw std::runtime_error("tls drop proxy: cannot listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len);
    m_port = ntohs(addr.sin_port);
    m_acceptor = std::thread([this] {
        while (!m_stop) {
            pollfd p{m_listen, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) {
                continue;
            }
            int client = ::accept(m_listen, nullptr, nullptr);
            if (client >= 0) {
                ++m_connections;
                m_workers.emplace_back([this, client] { serve(client); });
            }
        }
    });
}

TlsDropProxy::~TlsDropProxy() {
    m_stop = true;
    m_acceptor.join();
    ::shutdown(m_listen, SHUT_RDWR);
    ::close(m_listen);
    for (auto& w : m_workers) {
        w.join();
    }
}

// Copies bytes both ways. `burst` counts the client's bytes since the server last answered: a request
// (headers and body) arrives as one burst, so a burst over the limit is the request to lose. Its answer
// (the created object, echoed) is at least half its size.
void TlsDropProxy::serve(int client) {
    int upstream = connect_to(m_upstream_port);
    std::size_t burst = 0;
    std::size_t withheld = 0;
    bool armed = false;
    char buf[65536];
    while (upstream >= 0 && !m_stop) {
        pollfd p[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
        if (::poll(p, 2, 100) <= 0) {
            continue;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = ::recv(client, buf, sizeof buf, 0);
            if (n <= 0 || !send_all(upstream, buf, static_cast<std::size_t>(n))) {
                break;
            }
            burst += static_cast<std::size_t>(n);
            if (burst >= m_min_request_bytes && m_dropped.load() == 0) {
                armed = true;
            }
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = ::recv(upstream, buf, sizeof buf, 0);
            if (n <= 0) {
                break;
            }
            if (armed) {
                // Over HTTP/2 small frames (WINDOW_UPDATE, PING) may come first: hold everything back
                // until an answer the size of the echoed Job has come, then cut the client off.
                withheld += static_cast<std::size_t>(n);
                int expected = 0;
                if (withheld >= m_min_request_bytes / 2 && m_dropped.compare_exchange_strong(expected, 1)) {
                    break; // the server answered the big request; the client never sees it
                }
                continue;
            }
            if (!send_all(client, buf, static_cast<std::size_t>(n))) {
                break;
            }
            burst = 0;
        }
    }
    if (upstream >= 0) {
        ::close(upstream);
    }
    ::close(client);
}

} // namespace tandem_test
