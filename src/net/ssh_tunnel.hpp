#pragma once
// ProxyJump: a direct-tcpip channel through a jump host's session to the next hop, presented as a local
// socket. A pump thread owns the jump session from then on and copies bytes both ways; the next hop's
// session runs over the other end of a socketpair as if it were a TCP connection. When either side
// closes or breaks, the pump closes its end, so the session above sees EOF at once instead of hanging.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "net/ssh_session.hpp"

namespace tandem::net {

class SshTunnel {
public:
    // Opens the channel to host:port through `jump` and starts the pump. `fd()` is the caller's end; take
    // it with release_fd() and hand it to SshSession::open.
    static Result<std::unique_ptr<SshTunnel>> open(SshSession& jump, const std::string& host, int port,
                                                   const SshOptions& options);
    ~SshTunnel(); // stops the pump and closes the channel; the jump session must outlive the tunnel
    SshTunnel(const SshTunnel&) = delete;
    SshTunnel& operator=(const SshTunnel&) = delete;

    int release_fd();

private:
    SshTunnel(SshSession& jump, LIBSSH2_CHANNEL* channel, int ours, int theirs);
    void pump();

    SshSession& m_jump;
    LIBSSH2_CHANNEL* m_channel;
    int m_ours;   // the pump's end of the socketpair
    int m_theirs; // the session's end, until released
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

} // namespace tandem::net
