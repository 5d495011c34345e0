#pragma once
// A `type: slurm` cluster's settings, read from its config.yaml entry:
//
//   - name: lab
//     type: slurm
//     rest: {url: http://127.0.0.1:6820, user: slurmtest, token_env: SLURM_JWT, api_version: auto}
//     home: /home/slurmtest          # where jobs run and write output when the task has no workdir
//
// The token comes from exactly one of token, token_env, token_file. It is resolved when the backend is
// made and kept in memory only.

#include <chrono>
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

struct SlurmSettings {
    std::optional<RestSettings> rest;
    std::string home; // the user's home on the cluster: default working directory and output folder
    std::chrono::milliseconds timeout{15'000};
};

Result<SlurmSettings> parse_slurm_settings(const ClusterConfig& cluster, const GetEnv& getenv);

} // namespace tandem::slurm
