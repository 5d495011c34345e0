#pragma once
// The user's config: where tandem keeps things, and which clusters it may use. With no config file the
// one cluster is `local`, so a new user can launch at once.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/inventory.hpp"
#include "core/planner.hpp"
#include "core/spec.hpp"

namespace tandem {

struct Paths {
    std::string config_file; // $TANDEM_HOME/config.yaml or $XDG_CONFIG_HOME/tandem/config.yaml
    std::string state_dir;   // $TANDEM_HOME/state or $XDG_STATE_HOME/tandem
};

using GetEnv = std::function<std::optional<std::string>(const std::string&)>;
Result<Paths> resolve_paths(const GetEnv& getenv);

struct ClusterConfig {
    std::string name;
    BackendKind kind = BackendKind::local;
    nlohmann::json settings = nlohmann::json::object(); // everything but name/type, for the adapter
    SourceLoc loc;
    // Made by tandem from what it found (a kubeconfig context), not written in config.yaml: `status`
    // does not look for other machines' jobs there (issue 31).
    bool found = false;
    // `discover_jobs: false`: status keeps to this store's jobs there (a cluster shared by many of the
    // user's own projects, each with its own TANDEM_HOME).
    bool discover_jobs = true;
};

struct Config {
    std::string path; // the file read, empty when none existed
    std::vector<ClusterConfig> clusters;
    // With no `type: kubernetes` entry, every context of the user's kubeconfig is a cluster k8s/<context>
    // (`discover_kubeconfig: false` turns that off).
    bool discover_kubeconfig = true;
    // `planner.prefer`: backend order per kind of request (see PlannerPolicy for the default).
    PlannerPolicy planner;
    // `pending_timeout`: the default for every launch (a task's config.pending_timeout and
    // --pending-timeout override it); nullopt waits as long as the job waits.
    std::optional<std::int64_t> pending_timeout_seconds;
};

// Parses config text; every problem is reported at once as file:line:col lines in one config error.
Result<Config> parse_config(const std::string& text, const std::string& path);
// Reads the file at paths.config_file; a missing file gives the default config (one `local` cluster).
// The config file at paths.config_file, read through `files`; the defaults when there is none.
Result<Config> load_config(const Paths& paths, const FileAccess& files);

} // namespace tandem
