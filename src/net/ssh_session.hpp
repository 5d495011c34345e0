#pragma once
// One SSH session, that is one hop of a route: the TCP connection (or the socket a jump host's tunnel
// gives), the handshake, the host key check and authentication. libssh2 runs in non-blocking mode and
// every wait is a poll() with a deadline, so no call can hang on a silent peer.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "net/ssh_api.hpp"
#include "net/ssh_host.hpp"
#include "net/ssh_route.hpp"

namespace tandem::net {

using SshClock = std::chrono::steady_clock;

class SshSession {
public:
    // Handshake, host key check and authentication over `fd` (a connected socket, now owned).
    // `closed_in_handshake`, when given, is set when the server closed the connection during the
    // handshake (sshd does that to connections over its MaxStartups): worth a new connection.
    static Result<std::unique_ptr<SshSession>> open(int fd, const SshEndpoint& endpoint,
                                                    const std::vector<std::string>& default_identities,
                                                    const SshOptions& options,
                                                    bool* closed_in_handshake = nullptr);
    ~SshSession();
    SshSession(const SshSession&) = delete;
    SshSession& operator=(const SshSession&) = delete;

    LIBSSH2_SESSION* raw() const { return m_session; }
    int fd() const { return m_fd; }
    const std::string& name() const { return m_name; } // user@host:port

    // Waits until the socket is ready in the directions libssh2 is blocked on; false at the deadline.
    bool wait(SshClock::time_point deadline) const;
    // Calls `step` (an int-returning libssh2 call) until it stops answering EAGAIN; TIMEOUT at the deadline.
    template <class F> int retry(F&& step, SshClock::time_point deadline) const {
        for (;;) {
            int rc = step();
            if (rc != LIBSSH2_ERROR_EAGAIN) {
                return rc;
            }
            if (!wait(deadline)) {
                return LIBSSH2_ERROR_TIMEOUT;
            }
        }
    }
    // The same for a call that returns a pointer (nullptr with EAGAIN means "again").
    template <class T, class F> T* retry_ptr(F&& step, SshClock::time_point deadline, int& rc) const {
        for (;;) {
            T* p = step();
            if (p) {
                rc = 0;
                return p;
            }
            rc = libssh2().session_last_errno(m_session);
            if (rc != LIBSSH2_ERROR_EAGAIN) {
                return nullptr;
            }
            if (!wait(deadline)) {
                rc = LIBSSH2_ERROR_TIMEOUT;
                return nullptr;
            }
        }
    }

    std::string last_error() const; // libssh2's message for the last failure
    // Shuts the socket down so nothing more can wait on it; the session is then only good for freeing.
    void kill();

private:
    SshSession(int fd, std::string name);
    Status handshake(const SshEndpoint& endpoint, const SshOptions& options, bool* closed_by_peer);

    int m_fd = -1;
    LIBSSH2_SESSION* m_session = nullptr;
    std::string m_name;
    bool m_killed = false;
};

// A TCP connection to host:port within `timeout`; `unavailable` errors name `who`.
Result<int> tcp_connect(const std::string& host, int port, std::chrono::milliseconds timeout,
                        const std::string& who);

// An error for a failed libssh2 call: `timeout` for LIBSSH2_ERROR_TIMEOUT, `unavailable` for a broken
// transport, `remote` otherwise. `doing` says what failed ("ssh to u@h:p: opening a channel").
Error ssh_error(int rc, const SshSession& session, const std::string& doing);
// True when `rc` means the connection is gone or in an unknown state (the caller should drop it).
bool ssh_transport_broken(int rc);

// In ssh_known_hosts.cpp: puts the host key types known_hosts has for the endpoint first in the offer, so
// a host known by its RSA key is not refused for offering ED25519 first; then checks the key it sent.
void prefer_known_host_keys(SshSession& session, const SshEndpoint& endpoint, const SshOptions& options);
Status check_host_key(SshSession& session, const SshEndpoint& endpoint, const SshOptions& options);

// In ssh_auth.cpp: identity files, then ssh-agent, then the default keys; never prompts.
// The server closed (or reset) the connection: what a libssh2 call answers then.
inline bool ssh_closed_by_peer(int rc) {
    return rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_RECV ||
           rc == LIBSSH2_ERROR_BANNER_RECV;
}

Status authenticate(SshSession& session, const SshEndpoint& endpoint,
                    const std::vector<std::string>& default_identities, const SshOptions& options,
                    SshClock::time_point deadline);

inline void ssh_debug(const SshOptions& options, const std::string& line) {
    if (options.debug) {
        options.debug("ssh: " + line);
    }
}

} // namespace tandem::net
