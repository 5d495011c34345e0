#include "net/tcp_socket.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace tandem::net {

namespace {

// Milliseconds left for poll(): -1 without a deadline, 0 once it passed.
int poll_ms(TcpDeadline deadline) {
    if (!deadline) {
        return -1;
    }
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

} // namespace

int wait_for_fd(int fd, short events, TcpDeadline deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int rc = ::poll(&p, 1, poll_ms(deadline));
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        return rc > 0 ? 1 : rc;
    }
}

tl::expected<int, TcpFailure> tcp_connect_until(const std::string& host, const std::string& port,
                                                TcpDeadline deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        return tl::unexpected(TcpFailure{TcpFailure::Kind::resolve, ::gai_strerror(rc)});
    }
    std::string last = "no address";
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = std::strerror(errno);
            continue;
        }
        int error = 0;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            error = errno;
            if (error == EINPROGRESS) {
                const int ready = wait_for_fd(fd, POLLOUT, deadline);
                if (ready == 0) {
                    ::close(fd);
                    ::freeaddrinfo(found);
                    return tl::unexpected(TcpFailure{TcpFailure::Kind::timeout, {}});
                }
                socklen_t len = sizeof error;
                if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) {
                    error = errno;
                }
            }
        }
        if (error == 0) {
            const int one = 1;
            (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
            ::freeaddrinfo(found);
            return fd;
        }
        last = std::strerror(error);
        ::close(fd);
    }
    ::freeaddrinfo(found);
    return tl::unexpected(TcpFailure{TcpFailure::Kind::connect, last});
}

} // namespace tandem::net
