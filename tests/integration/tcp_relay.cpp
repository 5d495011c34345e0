#include "tcp_relay.hpp"

#include <algorithm>
#include <cerrno>
#include <poll.h>
#include <stdexcept>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace tandem_test {

TcpRelay::TcpRelay(int upstream_port) : m_upstream_port(upstream_port) {
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (m_listen < 0 || ::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listen, 16) != 0 ||
        ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        throw std::runtime_error("TcpRelay: cannot listen on 127.0.0.1");
    }
    m_port = ntohs(addr.sin_port);
    m_acceptor = std::thread([this] {
        while (!m_stop) {
            pollfd p{m_listen, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) {
                continue;
            }
            int client = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) {
                continue;
            }
            ++m_accepted;
            if (m_close_next > 0) {
                --m_close_next;
                ::close(client);
                continue;
            }
            std::lock_guard<std::mutex> lock(m_mutex);
            m_workers.emplace_back([this, client] { serve(client); });
        }
    });
}

TcpRelay::~TcpRelay() {
    m_stop = true;
    cut_all();
    if (m_acceptor.joinable()) {
        m_acceptor.join();
    }
    for (auto& w : m_workers) {
        w.join();
    }
    ::close(m_listen);
}

void TcpRelay::cut_all() {
    std::lock_guard<std::mutex> lock(m_mutex);
    for (int fd : m_fds) {
        ::shutdown(fd, SHUT_RDWR);
    }
}

void TcpRelay::freeze(bool frozen) {
    m_frozen = frozen;
}

void TcpRelay::serve(int client) {
    int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(m_upstream_port));
    if (::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(upstream);
        ::close(client);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_fds.push_back(client);
        m_fds.push_back(upstream);
    }
    char buf[64 * 1024];
    bool open = true;
    while (open && !m_stop) {
        if (m_frozen) {
            pollfd p[2] = {{client, 0, 0}, {upstream, 0, 0}}; // only notice hang-ups
            ::poll(p, 2, 50);
            if ((p[0].revents | p[1].revents) & (POLLHUP | POLLERR | POLLNVAL)) {
                break;
            }
            continue;
        }
        pollfd p[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
        if (::poll(p, 2, 100) <= 0) {
            continue;
        }
        for (int i = 0; i < 2 && open; ++i) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
            if (n <= 0) {
                open = false;
                break;
            }
            int to = i == 0 ? upstream : client;
            if (i == 0) {
                m_bytes_up += static_cast<std::uint64_t>(n);
            }
            for (ssize_t off = 0; off < n;) {
                ssize_t w = ::send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
                if (w <= 0) {
                    open = false;
                    break;
                }
                off += w;
            }
        }
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    m_fds.erase(
        std::remove_if(m_fds.begin(), m_fds.end(), [&](int fd) { return fd == client || fd == upstream; }),
        m_fds.end());
    ::close(client);
    ::close(upstream);
}

} // namespace tandem_test
