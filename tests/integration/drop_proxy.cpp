#include "drop_proxy.hpp"

#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace tandem_test {

namespace {

// Reads one HTTP message (head + Content-Length body) from `fd`; empty when the peer closed.
std::string read_message(int fd) {
    std::string data;
    char buf[16384];
    std::size_t need = std::string::npos;
    while (true) {
        auto head_end = data.find("\r\n\r\n");
        if (head_end != std::string::npos && need == std::string::npos) {
            std::size_t length = 0;
            std::string head = data.substr(0, head_end);
            for (auto& c : head) {
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            }
            if (auto at = head.find("content-length:"); at != std::string::npos) {
                length = std::stoul(head.substr(at + 15));
            }
            need = head_end + 4 + length;
        }
        if (need != std::string::npos && data.size() >= need) {
            return data;
        }
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            return need == std::string::npos ? std::string() : data;
        }
        data.append(buf, static_cast<std::size_t>(n));
    }
}

bool send_all(int fd, const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
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

DropProxy::DropProxy(int upstream_port, std::string drop_prefix)
    : m_upstream_port(upstream_port), m_drop_prefix(std::move(drop_prefix)) {
    m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listen, 16) != 0) {
        throw std::runtime_error("drop proxy: cannot listen");
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
                m_workers.emplace_back([this, client] { serve(client); });
            }
        }
    });
}

DropProxy::~DropProxy() {
    m_stop = true;
    m_acceptor.join();
    ::shutdown(m_listen, SHUT_RDWR);
    ::close(m_listen);
    for (auto& w : m_workers) {
        w.join();
    }
}

void DropProxy::serve(int client) {
    int upstream = connect_to(m_upstream_port);
    while (upstream >= 0 && !m_stop) {
        pollfd p{client, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
            continue;
        }
        std::string request = read_message(client);
        if (request.empty() || !send_all(upstream, request)) {
            break;
        }
        std::string response = read_message(upstream);
        if (response.empty()) {
            break;
        }
        int expected = 0;
        if (request.rfind(m_drop_prefix, 0) == 0 && m_dropped.compare_exchange_strong(expected, 1)) {
            break; // the server acted; the client never hears of it
        }
        if (!send_all(client, response)) {
            break;
        }
        // slurmrestd closes after each answer ("Connection: Close"): open a fresh upstream for the next one.
        ::close(upstream);
        upstream = connect_to(m_upstream_port);
    }
    if (upstream >= 0) {
        ::close(upstream);
    }
    ::close(client);
}

} // namespace tandem_test
