#pragma once
// The live state behind an SshHost: the route, the sessions and tunnels of the current connection, the
// SFTP session on it, and what happened to the last one. A failed call whose error means the transport is
// gone drops the whole connection at once (sockets shut, nothing left to wait on) and remembers why, so
// later calls fail fast until reconnect().

#include <memory>
#include <string>
#include <vector>

#include "net/ssh_route.hpp"
#include "net/ssh_session.hpp"
#include "net/ssh_tunnel.hpp"

namespace tandem::net {

struct SshConnection {
    std::vector<std::unique_ptr<SshSession>> jumps;
    std::vector<std::unique_ptr<SshTunnel>> tunnels; // tunnels[i] runs through jumps[i]
    std::unique_ptr<SshSession> target;
    LIBSSH2_SFTP* sftp = nullptr;
    bool broken = false;

    SshConnection() = default;
    SshConnection(const SshConnection&) = delete;
    SshConnection& operator=(const SshConnection&) = delete;
    ~SshConnection();
};

struct SshHost::Impl {
    SshRoute route;
    SshOptions options;
    std::unique_ptr<SshConnection> conn;
    std::string lost; // why the last connection was dropped; empty when none was
    int handshakes = 0;

    std::string who() const { return "ssh to " + route.target.describe(); }
    SshClock::time_point io_deadline() const { return SshClock::now() + options.io_timeout; }

    Status open();   // a new connection along the route
    Status open_once(bool& closed_in_handshake);
    static constexpr int k_handshake_attempts = 6;
    Status ensure(); // the current one, opening it on first use; fails fast after a loss
    void drop(const std::string& why);
    // The error for a failed libssh2 call on the target session; drops the connection when it is broken.
    tl::unexpected<Error> failure(int rc, const std::string& doing);
    Result<LIBSSH2_SFTP*> sftp();
    // For rc == LIBSSH2_ERROR_SFTP_PROTOCOL: the server's SFTP status code.
    unsigned long sftp_status() const;
};

// Frees what a call opened (a channel, an SFTP handle) at scope exit, unless the connection it lived on was
// dropped meanwhile (libssh2_session_free has freed it then).
template <class Free> class OnExit {
public:
    OnExit(SshHost::Impl& impl, Free free) : m_impl(impl), m_conn(impl.conn.get()), m_free(std::move(free)) {}
    ~OnExit() {
        if (m_impl.conn.get() == m_conn && m_conn) {
            m_free(*m_conn->target, SshClock::now() + std::chrono::seconds(2));
        }
    }
    OnExit(const OnExit&) = delete;
    OnExit& operator=(const OnExit&) = delete;

private:
    SshHost::Impl& m_impl;
    SshConnection* m_conn;
    Free m_free;
};

inline LIBSSH2_CHANNEL* open_session(LIBSSH2_SESSION* s) {
    return libssh2().channel_open_ex(s, "session", sizeof("session") - 1, LIBSSH2_CHANNEL_WINDOW_DEFAULT,
                                     LIBSSH2_CHANNEL_PACKET_DEFAULT, nullptr, 0);
}

inline auto channel_freer(LIBSSH2_CHANNEL* ch) {
    return [ch](SshSession& s, SshClock::time_point d) {
        s.retry([&] { return libssh2().channel_free(ch); }, d);
    };
}
} // namespace tandem::net
