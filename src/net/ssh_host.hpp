#pragma once
// The SSH transport: `RemoteHost` over libssh2. One TCP connection and one SSH handshake per `SshHost`,
// made on first use and kept; every command is a channel on it and every file transfer goes through one
// SFTP session on it. The host key is always checked against known_hosts: an unknown or changed key is
// refused with its SHA256 fingerprint and how to trust it. No call ever prompts (no passphrase, no "are
// you sure"), and every wait has a deadline. Not thread-safe: one thread uses an SshHost at a time.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "net/remote_host.hpp"

namespace tandem::net {

// What the cluster config says. Empty fields come from the OpenSSH client config (ssh_config.hpp), then
// from OpenSSH's defaults; a field set here always wins over the config file.
struct SshTarget {
    std::string host;          // a name, an address, or a `Host` alias of ~/.ssh/config
    int port = 0;              // 0: the config's Port, else 22
    std::string user;          // empty: the config's User, else the local user name
    std::string identity_file; // empty: the config's IdentityFile(s); then ssh-agent, then ~/.ssh/id_*
    std::string known_hosts;   // empty: the config's UserKnownHostsFile, else ~/.ssh/known_hosts
    std::string proxy_jump;    // "[user@]host[:port],..."; empty: the config's ProxyJump; "none": direct
};

struct SshOptions {
    std::string config_path; // empty: HOME/.ssh/config (a missing file is no config)
    std::string home;        // empty: $HOME; the base of `~`, ~/.ssh/config and the default keys
    std::chrono::milliseconds connect_timeout{10'000}; // TCP connect, handshake and auth, per hop
    std::chrono::milliseconds io_timeout{60'000};      // the longest any later wait may go without progress
    // One line per step ("ssh: ..."), for --verbose. Never carries key material.
    std::function<void(const std::string&)> debug;
};

class SshHost final : public RemoteHost {
public:
    struct Impl;
    explicit SshHost(std::unique_ptr<Impl> impl);
    ~SshHost() override;
    SshHost(const SshHost&) = delete;
    SshHost& operator=(const SshHost&) = delete;

    std::string describe() const override;
    Result<ExecResult> exec(const std::string& command, std::string_view input = {}) override;
    Result<int> exec_streaming(const std::string& command, ExecStreams& io) override;
    Result<std::optional<RemoteFileInfo>> stat(const std::string& path) override;
    Result<std::optional<std::string>> read(const std::string& path, std::uint64_t offset,
                                            std::uint64_t max_bytes) override;
    Status write(const std::string& path, std::string_view data, int mode) override;
    Status make_dirs(const std::string& path) override;

    // Connects now if not connected (the other calls do it on first use); `check` uses it.
    Status connect();
    // Drops the connection (a lost one, or a healthy one) and makes a new one at once. After a dropped
    // connection every call fails fast with `unavailable` until reconnect() succeeds.
    Status reconnect() override;
    // SSH handshakes with the target made so far (jump hosts not counted): 1 after any number of calls
    // on a healthy connection.
    int handshakes() const;

private:
    std::unique_ptr<Impl> m_impl;
};

// Resolves `target` against the OpenSSH client config and returns an unconnected host; only a bad
// setting fails here (ErrorKind::config). Connection errors come from the first call: `unavailable`
// (refused, unreachable, timed out, dropped), `unauthorized` (no key accepted; host key unknown or
// changed), `remote` (the server answered an SFTP or channel request with an error).
Result<std::unique_ptr<SshHost>> make_ssh_host(const SshTarget& target, const SshOptions& options);
Result<std::unique_ptr<RemoteHost>> connect_ssh(const SshTarget& target, const SshOptions& options);

} // namespace tandem::net
