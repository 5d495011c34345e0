#pragma once
// Every backend kind tandem knows, in one table: adding a backend means adding a row here.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"

namespace tandem::backends {

struct BackendContext {
    std::string state_dir;
    GetEnv getenv; // for settings such as token_env
};

using BackendFactory = Result<std::unique_ptr<Backend>> (*)(const ClusterConfig&, const BackendContext&);

struct BackendEntry {
    BackendKind kind;
    const char* description;
    BackendFactory create;
    // Clusters found without configuration (kubeconfig contexts), added when the config has none of this
    // kind; nullptr: none are.
    std::vector<ClusterConfig> (*discover)(const Config& config, const GetEnv& getenv) = nullptr;
    // Whether reaching this cluster loads libcurl; nullptr: never.
    bool (*needs_libcurl)(const ClusterConfig& cluster) = nullptr;
};

const std::vector<BackendEntry>& backend_table();
// Whether reaching this cluster loads libcurl (Kubernetes, or a slurmrestd URL that is not plain http://
// without a proxy), so the CLI can start loading it early.
bool uses_libcurl(const ClusterConfig& cluster);

Result<std::unique_ptr<Backend>> make_backend(const ClusterConfig& cluster, const BackendContext& context);

// Adds to `config` the clusters each kind finds by itself (BackendEntry::discover) when the config names
// none of that kind and none of the same name.
void add_discovered_clusters(Config& config, const GetEnv& getenv);

// The one-line refusal (with its hint) for a backend that does not offer `capability`
// (Backend::capabilities() left it null); `job_id` names the job in hints where one is known.
Error capability_refusal(const Backend& backend, Capability capability, std::int64_t job_id = 0);

} // namespace tandem::backends
