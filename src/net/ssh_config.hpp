#pragma once
// The OpenSSH client config (~/.ssh/config), the part tandem honours: Host and Match blocks (`Match all`,
// `Match host`, `Match originalhost`; other criteria never match), Include, HostName, User, Port,
// IdentityFile, ProxyJump, UserKnownHostsFile, StrictHostKeyChecking. As in ssh_config(5): keywords are
// case-insensitive, `Key Value` and `Key=Value` both work, double quotes group a value, the first value
// obtained for a keyword wins (IdentityFile adds up), unknown keywords are ignored. Pure: the files come
// from an `SshConfigSource`, so unit tests use a map.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace tandem::net {

struct SshConfigSource {
    // The file's text; nullopt when it does not exist. An unreadable file is an error.
    std::function<Result<std::optional<std::string>>(const std::string& path)> read;
    // The existing paths a glob pattern matches, sorted.
    std::function<std::vector<std::string>(const std::string& pattern)> glob;
};
SshConfigSource file_system_source();

// What the config gives one host, as written: `~` and %-tokens are expanded later (expand_ssh_path).
struct SshHostConfig {
    std::optional<std::string> hostname;
    std::optional<std::string> user;
    std::optional<int> port;
    std::vector<std::string> identity_files;
    std::optional<std::string> proxy_jump;
    std::vector<std::string> known_hosts_files;
    std::optional<std::string> strict_host_key_checking;
};

// Looks `host` (the name as the user wrote it) up in the config at `path`; a missing file gives an empty
// SshHostConfig. `ssh_dir` (~/.ssh) is where relative Include paths start. Errors name file:line.
Result<SshHostConfig> lookup_ssh_config(const std::string& path, const std::string& host,
                                        const std::string& ssh_dir, const SshConfigSource& source);

// One OpenSSH pattern (`*`, `?`), matched case-insensitively against the whole name.
bool ssh_pattern_match(std::string_view pattern, std::string_view name);
// A Host line's patterns: true when one matches and no `!pattern` does.
bool ssh_host_patterns_match(const std::vector<std::string>& patterns, std::string_view name);

// One hop of a ProxyJump list.
struct SshJump {
    std::string user; // empty: from the config, else the local user
    std::string host;
    int port = 0; // 0: from the config, else 22
};
// "[user@]host[:port]" or "ssh://[user@]host[:port]", comma-separated; "none" is an empty list.
// `[v6addr]:port` is accepted. `what` names the setting in errors.
Result<std::vector<SshJump>> parse_proxy_jump(std::string_view value, const std::string& what);

// The values %-tokens stand for.
struct SshTokens {
    std::string host;        // %h: the host name after HostName
    std::string local_user;  // %u
    std::string remote_user; // %r
    int port = 22;           // %p
    std::string home;        // %d, and `~`
};
// Expands a leading `~` and `%h %u %r %p %d %%`; another %-token is an error naming `what`.
Result<std::string> expand_ssh_path(std::string_view value, const SshTokens& tokens, const std::string& what);

} // namespace tandem::net
