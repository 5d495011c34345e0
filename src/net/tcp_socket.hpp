#pragma once
// Plain TCP, shared by the SSH transport and the plain HTTP exchange: a connected non-blocking socket
// within a deadline, and waiting on one. Each caller words its own errors from TcpFailure.

#include <chrono>
#include <optional>
#include <string>

#include <tl/expected.hpp>

namespace tandem::net {

using TcpDeadline = std::optional<std::chrono::steady_clock::time_point>; // nullopt: no limit

struct TcpFailure {
    enum class Kind { resolve, timeout, connect } kind;
    std::string detail; // gai_strerror or strerror of the last address tried; empty for a timeout
};

// A socket connected to the first address of host:port that accepts (non-blocking, close-on-exec,
// TCP_NODELAY, SO_KEEPALIVE), or why none did. A timeout ends the attempt: later addresses are not tried.
tl::expected<int, TcpFailure> tcp_connect_until(const std::string& host, const std::string& port,
                                                TcpDeadline deadline);

// poll() for `events` on fd until the deadline: 1 ready, 0 timed out, -1 error (errno set).
int wait_for_fd(int fd, short events, TcpDeadline deadline);

} // namespace tandem::net
