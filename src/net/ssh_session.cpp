#include "net/ssh_session.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "net/tcp_socket.hpp"

namespace tandem::net {

namespace {

// libssh2's own send() does not pass MSG_NOSIGNAL: a write to a dropped connection would kill tandem.
LIBSSH2_SEND_FUNC(send_no_signal) {
    (void)abstract;
    ssize_t rc = ::send(socket, buffer, length, flags | MSG_NOSIGNAL);
    return rc < 0 ? -errno : rc;
}

int remaining_ms(SshClock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SshClock::now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
}

} // namespace

SshSession::SshSession(int fd, std::string name) : m_fd(fd), m_name(std::move(name)) {}

SshSession::~SshSession() {
    if (m_session) {
        if (!m_killed) {
            // A polite goodbye, but never a wait: the socket is non-blocking and libssh2 in non-blocking
            // mode.
            libssh2().session_disconnect_ex(m_session, SSH_DISCONNECT_BY_APPLICATION, "tandem done", "");
        }
        // In non-blocking mode libssh2_session_free answers EAGAIN while it closes channels (and frees
        // nothing): give it a second, then shut the socket so every further step fails at once.
        const auto deadline = SshClock::now() + std::chrono::seconds(1);
        for (int tries = 0; libssh2().session_free(m_session) == LIBSSH2_ERROR_EAGAIN && tries < 1000;
             ++tries) {
            if (m_killed || !wait(deadline)) {
                kill();
            }
        }
    }
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

void SshSession::kill() {
    m_killed = true;
    if (m_fd >= 0) {
        ::shutdown(m_fd, SHUT_RDWR);
    }
}

std::string SshSession::last_error() const {
    char* message = nullptr;
    int len = 0;
    libssh2().session_last_error(m_session, &message, &len, 0);
    return message && len > 0 ? std::string(message, static_cast<std::size_t>(len))
                              : std::string("no detail");
}

bool SshSession::wait(SshClock::time_point deadline) const {
    int dirs = libssh2().session_block_directions(m_session);
    pollfd p{};
    p.fd = m_fd;
    p.events = POLLIN; // incoming data may unblock a writer too (window adjustments)
    if (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND) {
        p.events |= POLLOUT;
    }
    for (;;) {
        int left = remaining_ms(deadline);
        if (left == 0) {
            return false;
        }
        int rc = ::poll(&p, 1, left);
        if (rc > 0) {
            return true;
        }
        if (rc == 0) {
            return false;
        }
        if (errno != EINTR) {
            return true; // let the libssh2 call see the broken socket
        }
    }
}

Result<std::unique_ptr<SshSession>> SshSession::open(int fd, const SshEndpoint& endpoint,
                                                     const std::vector<std::string>& default_identities,
                                                     const SshOptions& options,
                                                     bool* closed_in_handshake) {
    std::string load_error;
    if (load_libssh2(&load_error) == nullptr) {
        ::close(fd);
        return fail(ErrorKind::internal, "ssh to " + endpoint.describe() + ": " + load_error);
    }
    std::unique_ptr<SshSession> s(new SshSession(fd, endpoint.describe()));
    s->m_session = libssh2().session_init_ex(nullptr, nullptr, nullptr, nullptr);
    if (!s->m_session) {
        return fail(ErrorKind::internal, "ssh to " + s->m_name + ": libssh2 could not make a session");
    }
    libssh2().session_callback_set(s->m_session, LIBSSH2_CALLBACK_SEND,
                                   reinterpret_cast<void*>(&send_no_signal));
    libssh2().session_set_blocking(s->m_session, 0);
    const auto deadline = SshClock::now() + options.connect_timeout;
    auto st = s->handshake(endpoint, options, closed_in_handshake);
    if (!st) {
        return tl::unexpected(st.error());
    }
    st = check_host_key(*s, endpoint, options);
    if (!st) {
        return tl::unexpected(st.error());
    }
    st = authenticate(*s, endpoint, default_identities, options, deadline);
    if (!st) {
        return tl::unexpected(st.error());
    }
    return s;
}

Status SshSession::handshake(const SshEndpoint& endpoint, const SshOptions& options, bool* closed_by_peer) {
    prefer_known_host_keys(*this, endpoint, options);
    const auto deadline = SshClock::now() + options.connect_timeout;
    int rc = retry([&] { return libssh2().session_handshake(m_session, m_fd); }, deadline);
    if (rc == LIBSSH2_ERROR_TIMEOUT) {
        return fail(ErrorKind::unavailable,
                    "ssh to " + m_name + ": no SSH handshake within " +
                        std::to_string(options.connect_timeout.count() / 1000) + "s",
                    "is an SSH server listening on that port?");
    }
    if (rc != 0) {
        if (closed_by_peer) {
            *closed_by_peer = ssh_closed_by_peer(rc);
        }
        return fail(ErrorKind::unavailable,
                    "ssh to " + m_name + ": the SSH handshake failed: " + last_error());
    }
    ssh_debug(options, "handshake with " + m_name + " done");
    return {};
}

Result<int> tcp_connect(const std::string& host, int port, std::chrono::milliseconds timeout,
                        const std::string& who) {
    auto fd = tcp_connect_until(host, std::to_string(port), SshClock::now() + timeout);
    if (fd) {
        return *fd;
    }
    switch (fd.error().kind) {
    case TcpFailure::Kind::resolve:
        return fail(ErrorKind::unavailable,
                    "ssh to " + who + ": cannot resolve " + host + ": " + fd.error().detail);
    case TcpFailure::Kind::timeout:
        return fail(ErrorKind::unavailable,
                    "ssh to " + who + ": no answer within " + std::to_string(timeout.count() / 1000) + "s",
                    "check the host and port, and that no firewall drops the connection");
    case TcpFailure::Kind::connect:
        break;
    }
    return fail(ErrorKind::unavailable, "ssh to " + who + ": cannot connect: " + fd.error().detail,
                "is sshd running on " + host + " port " + std::to_string(port) + "?");
}

bool ssh_transport_broken(int rc) {
    switch (rc) {
    case LIBSSH2_ERROR_SFTP_PROTOCOL:
    case LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED:
    case LIBSSH2_ERROR_CHANNEL_FAILURE:
    case LIBSSH2_ERROR_REQUEST_DENIED:
    case LIBSSH2_ERROR_FILE:
        return false;
    default:
        return true;
    }
}

Error ssh_error(int rc, const SshSession& session, const std::string& doing) {
    if (rc == LIBSSH2_ERROR_TIMEOUT) {
        return Error{
            ErrorKind::timeout, doing + ": no progress before the timeout; the connection was dropped", {}};
    }
    if (ssh_transport_broken(rc)) {
        return Error{
            ErrorKind::unavailable, doing + ": the connection was lost (" + session.last_error() + ")", {}};
    }
    return Error{ErrorKind::remote, doing + ": " + session.last_error(), {}};
}

} // namespace tandem::net
