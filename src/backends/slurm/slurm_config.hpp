#pragma once
// A `type: slurm` cluster's settings, read from its config.yaml entry:
//
//   - name: lab
//     type: slurm
//     rest: {url: http://127.0.0.1:6820, user: slurmtest, token_env: SLURM_JWT, api_version: auto}
//     ssh: {host: login.lab, port: "22", user: slurmtest, identity_file: ~/.ssh/id_ed25519,
//           known_hosts: ~/.ssh/known_hosts, proxy_jump: bastion}
//     home: /home/slurmtest          # where jobs run and write output when the task has no workdir
//     workdir_limit_mb: "100"        # largest workdir uploaded over SSH
//     default_partition: cpu         # where a plain sbatch goes; slurmrestd v0.0.40+ does not say it
//
// A cluster has rest:, ssh:, or both (control over REST; workdir upload and logs over SSH). The token
// comes from exactly one of token, token_env, token_file. It is resolved when the backend is made and
// kept in memory only. `ssh.host` may be a Host alias of ~/.ssh/config, which the SSH transport reads.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"

namespace tandem::slurm {

struct RestSettings {
    std::string url;         // http(s)://host:port, no trailing slash
    std::string user;        // X-SLURM-USER-NAME
    std::string token;       // X-SLURM-USER-TOKEN (a JWT); secret
    std::string api_version; // "auto" or "v0.0.38" / "v0.0.40" / "v0.0.41"
    std::string ca_file;     // for https with a private CA
};

// What `ssh:` says; empty fields are left to ~/.ssh/config and the transport's defaults.
struct SshSettings {
    std::string host; // a host name, an address, or a Host alias of ~/.ssh/config
    std::optional<int> port;
    std::string user;
    std::string identity_file;
    std::string known_hosts;
    std::string proxy_jump;
};

struct SlurmSettings {
    std::optional<RestSettings> rest;
    std::optional<SshSettings> ssh;
    std::string home; // the user's home on the cluster: default working directory and output folder
    // The partition a plain sbatch goes to (Default=YES), when given: it overrides what the cluster
    // says, and supplies it where slurmrestd v0.0.40+ says nothing (its partition answer has no flag).
    std::string default_partition;
    std::chrono::milliseconds timeout{15'000};
    std::uint64_t workdir_limit_bytes = std::uint64_t{100} * 1024 * 1024;
};

Result<SlurmSettings> parse_slurm_settings(const ClusterConfig& cluster, const GetEnv& getenv);

} // namespace tandem::slurm
