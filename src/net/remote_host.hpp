#pragma once
// The SSH seam. The Slurm-over-SSH adapter talks to `RemoteHost`; unit tests substitute a recording fake,
// and the real thing is `SshHost` (libssh2, net/ssh_host.hpp): one TCP connection and one handshake per
// tandem invocation, every command and file transfer a channel on it. Every failure is a classified
// `Error` whose message is one line and names user@host:port; no key material or passphrase ever appears.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace tandem::net {

struct ExecResult {
    int exit_status = 0; // the remote command's exit status (128+N when killed by signal N)
    std::string out;     // its stdout, whole
    std::string err;     // its stderr, whole
};

struct TerminalSize {
    int columns = 80;
    int rows = 24;
};

// A command whose input and output stream (an upload's tar, `tandem exec`, `tandem shell`).
struct ExecStreams {
    // Its stdin: `produce` fills up to `capacity` bytes and returns how many, 0 at the end (an error
    // stops the command and is returned); or `input_fd`, read whenever it is readable until its end (a
    // terminal). Neither: stdin is closed at once.
    std::function<Result<std::size_t>(char* buffer, std::size_t capacity)> produce;
    int input_fd = -1;
    // Its stdout and stderr as they arrive (with a pty, both come on `out`).
    std::function<void(std::string_view)> out;
    std::function<void(std::string_view)> err;
    // A pseudo-terminal of this size for the command (`term` is its TERM), and a check for a new size,
    // made between reads.
    std::optional<TerminalSize> pty;
    std::string term = "xterm";
    std::function<std::optional<TerminalSize>()> resized;
    // An interactive command may stay quiet for ever; otherwise the host's I/O timeout applies.
    bool interactive = false;
};

struct RemoteFileInfo {
    std::uint64_t size = 0;
    std::int64_t mtime = 0; // Unix seconds
    bool is_dir = false;
};

class RemoteHost {
public:
    virtual ~RemoteHost() = default;

    // What errors and hints call this host: "slurmtest@127.0.0.1:2222".
    virtual std::string describe() const = 0;

    // Runs `command` through the remote user's shell (it is a shell command line: every user-supplied word
    // in it must already be quoted with slurm::shell_quote or equivalent). `input` is written to its stdin,
    // then stdin is closed. A non-zero exit status is not an error: the caller reads it.
    virtual Result<ExecResult> exec(const std::string& command, std::string_view input = {}) = 0;

    // Runs `command` (a shell command line, as for exec) with streamed input and output; returns its exit
    // status (128+N when killed by signal N).
    virtual Result<int> exec_streaming(const std::string& command, ExecStreams& io) {
        (void)command;
        (void)io;
        return fail(ErrorKind::internal, describe() + ": streaming commands are not supported here");
    }

    // SFTP. A missing path is nullopt, not an error.
    virtual Result<std::optional<RemoteFileInfo>> stat(const std::string& path) = 0;
    // Up to `max_bytes` from `offset`; a missing file is nullopt. Returns fewer bytes at the end of file.
    virtual Result<std::optional<std::string>> read(const std::string& path, std::uint64_t offset,
                                                    std::uint64_t max_bytes) = 0;
    // Creates or truncates `path` with `mode` and writes `data` (the parent folder must exist).
    virtual Status write(const std::string& path, std::string_view data, int mode) = 0;
    // mkdir -p with mode 0700 for the folders it makes.
    virtual Status make_dirs(const std::string& path) = 0;

    // Drops the connection and makes a new one, for a caller (a log follower) that lost it and wants to
    // go on. After a lost connection every call fails fast until this succeeds. Hosts without a
    // connection to lose (a recording fake) have nothing to do.
    virtual Status reconnect() { return {}; }
};

} // namespace tandem::net
