#include "net/ssh_tunnel.hpp"

#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <unistd.h>

#include <sys/socket.h>

namespace tandem::net {

Result<std::unique_ptr<SshTunnel>> SshTunnel::open(SshSession& jump, const std::string& host, int port,
                                                   const SshOptions& options) {
    const auto deadline = SshClock::now() + options.connect_timeout;
    int rc = 0;
    LIBSSH2_CHANNEL* channel = jump.retry_ptr<LIBSSH2_CHANNEL>(
        [&] { return libssh2().channel_direct_tcpip_ex(jump.raw(), host.c_str(), port, "127.0.0.1", 22); },
        deadline, rc);
    if (!channel) {
        Error e = ssh_error(rc, jump,
                            "ssh via " + jump.name() + ": opening a tunnel to " + host + ":" +
                                std::to_string(port));
        if (!ssh_transport_broken(rc)) {
            e.kind = ErrorKind::unavailable;
            e.hint = "the jump host must allow TCP forwarding (AllowTcpForwarding) and reach " + host + ":" +
                     std::to_string(port);
        }
        return tl::unexpected(e);
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
        libssh2().channel_free(channel);
        return fail(ErrorKind::internal, "ssh via " + jump.name() + ": socketpair failed");
    }
    ssh_debug(options,
              "tunnel through " + jump.name() + " to " + host + ":" + std::to_string(port) + " open");
    return std::unique_ptr<SshTunnel>(new SshTunnel(jump, channel, pair[0], pair[1]));
}

SshTunnel::SshTunnel(SshSession& jump, LIBSSH2_CHANNEL* channel, int ours, int theirs)
    : m_jump(jump), m_channel(channel), m_ours(ours), m_theirs(theirs) {
    m_thread = std::thread([this] { pump(); });
}

SshTunnel::~SshTunnel() {
    m_stop = true;
    if (m_thread.joinable()) {
        m_thread.join();
    }
    if (m_channel) {
        libssh2().channel_free(m_channel); // non-blocking: sends the close, never waits for the answer
    }
    if (m_ours >= 0) {
        ::close(m_ours);
    }
    if (m_theirs >= 0) {
        ::close(m_theirs);
    }
}

int SshTunnel::release_fd() {
    int fd = m_theirs;
    m_theirs = -1;
    return fd;
}

void SshTunnel::pump() {
    std::string down; // from the channel, not yet written to the socket
    std::string up;   // from the socket, not yet written to the channel
    bool remote_eof = false;
    char buf[32 * 1024];
    while (!m_stop) {
        bool progress = false;
        if (down.empty() && !remote_eof) {
            ssize_t n = libssh2().channel_read_ex(m_channel, 0, buf, sizeof buf);
            if (n > 0) {
                down.assign(buf, static_cast<std::size_t>(n));
                progress = true;
            } else if (n == 0 && libssh2().channel_eof(m_channel)) {
                remote_eof = true;
                ::shutdown(m_ours, SHUT_WR);
            } else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
                break;
            }
        }
        if (!down.empty()) {
            ssize_t n = ::send(m_ours, down.data(), down.size(), MSG_NOSIGNAL);
            if (n > 0) {
                down.erase(0, static_cast<std::size_t>(n));
                progress = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                break;
            }
        }
        if (up.empty()) {
            ssize_t n = ::recv(m_ours, buf, sizeof buf, 0);
            if (n > 0) {
                up.assign(buf, static_cast<std::size_t>(n));
                progress = true;
            } else if (n == 0) {
                break; // the session above closed its end
            } else if (errno != EAGAIN && errno != EINTR) {
                break;
            }
        }
        if (!up.empty()) {
            ssize_t n = libssh2().channel_write_ex(m_channel, 0, up.data(), up.size());
            if (n > 0) {
                up.erase(0, static_cast<std::size_t>(n));
                progress = true;
            } else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
                break;
            }
        }
        if (remote_eof && down.empty()) {
            break;
        }
        if (progress) {
            continue;
        }
        pollfd p[2]{};
        p[0].fd = m_jump.fd();
        p[0].events = POLLIN;
        if (libssh2().session_block_directions(m_jump.raw()) & LIBSSH2_SESSION_BLOCK_OUTBOUND) {
            p[0].events |= POLLOUT;
        }
        p[1].fd = m_ours;
        p[1].events = static_cast<short>((up.empty() ? POLLIN : 0) | (down.empty() ? 0 : POLLOUT));
        ::poll(p, 2, 100);
    }
    // Whatever ended the pump, the session above must see it now rather than wait for a timeout.
    ::shutdown(m_ours, SHUT_RDWR);
}

} // namespace tandem::net
