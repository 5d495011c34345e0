#pragma once
// From an `SshTarget` and the OpenSSH client config to the concrete hops to connect: host, port, user,
// the keys to offer and the known_hosts files to check, for every jump host and the target. Pure: the
// config comes through an `SshConfigSource`, the home folder and the local user name are parameters.

#include <string>
#include <vector>

#include "net/ssh_config.hpp"
#include "net/ssh_host.hpp"

namespace tandem::net {

struct SshEndpoint {
    std::string user;
    std::string host; // after HostName
    int port = 22;
    std::vector<std::string> identity_files; // expanded, in the order they are offered; may not exist
    std::vector<std::string> known_hosts;    // expanded; missing files count as empty
    std::string strict_host_key_checking;    // as configured (informational: tandem always checks)

    std::string describe() const; // "user@host:port"
};

struct SshRoute {
    std::vector<SshEndpoint> jumps; // in connection order; empty for a direct connection
    SshEndpoint target;
    std::vector<std::string> default_identities; // ~/.ssh/id_ed25519, id_ecdsa, id_rsa

    std::string describe() const; // the target, plus " via a, b" when it goes through jump hosts
};

struct SshLocal {
    std::string home;       // `~`
    std::string local_user; // %u, and the user when neither the target nor the config names one
};

Result<SshRoute> resolve_ssh_route(const SshTarget& target, const std::string& config_path,
                                   const SshLocal& local, const SshConfigSource& source);

} // namespace tandem::net
