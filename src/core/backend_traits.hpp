#pragma once
// What core knows of each backend kind, one row per kind (backend_traits.cpp): its names, its column of
// the field-support table, the planner's hooks and default preferences, its task-file settings section
// and provision timeout, its infra pin words. Core asks the row instead of switching on the kind; the
// adapter, its factory and its capabilities are the backend's own folder and its row in
// backends/registry.cpp. docs/ARCHITECTURE.md lists what a new backend touches.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/inventory.hpp"
#include "core/spec.hpp"

namespace tandem {

namespace detail {
class YamlWalker;
}

// A condition on a task that some kinds refuse or accept without effect, named by the field it reads.
// Listed in the order their errors are reported (the planner shows the first ones).
enum class SpecCondition {
    service,
    use_spot,
    image_id,
    fractional_gpu,
    multi_node,
    ports,
    custom_disk_tier, // a disk_tier other than best
    best_network_tier,
    autostop_stops, // autostop that stops (not down, not off)
    local_disk,
    local_file_mounts, // file_mounts from local paths
    labels,
    disk_size,
    best_disk_tier,
    other_network_tier,
    autostop_harmless, // autostop with down, or turned off
    job_recovery,
    max_hourly_cost,
    priority,
    priority_class,
    sweep,            // a sweep (issue 33)
    multi_node_sweep, // a sweep whose elements run on several nodes each
};

// One cell of a kind's column: refused (why_not) or accepted without effect (ignored). A condition
// without a cell is supported.
struct FieldVerdict {
    SpecCondition when;
    std::string_view why_not;
    std::string_view ignored;
};

// The workloads the planner's default preference orders are for.
enum class Workload { multi_node, shared_gpu, other };

struct BackendTraits {
    BackendKind kind = BackendKind::local;
    std::string_view name = {};                   // "slurm", "k8s": tables, --json, infra pins
    std::span<const std::string_view> aliases = {}; // other spellings accepted ("kubernetes")
    std::string_view config_type = {};             // config.yaml's `type:` ("kubernetes")
    std::span<const FieldVerdict> fields = {};     // its column of the field-support table

    // Planner. `cluster_prefix`: clusters found rather than configured are named "<prefix><name>" (k8s/
    // <context>), and an infra pin may leave the prefix out. `pins_cluster`: infra `<name>/<cluster>`
    // names one cluster (local is this machine). Ranks are the default preference (0 first).
    std::string_view cluster_prefix = {};
    bool pins_cluster = true;
    bool ranks_share_nodes = false;        // a rank is a pod: pods of one job may share a node
    bool starts_without_idle_nodes = false; // CPU tasks start at once (a process, no queue)
    int rank_multi_node = 0, rank_shared_gpu = 0, rank_other = 0;
    // Why no pool of `cluster` can run the task because of the kind's own settings, or empty.
    std::string (*cluster_check)(const TaskSpec& spec, const ClusterInventory& cluster) = nullptr;
    // Why `pool` cannot run the task because of the kind's own settings (config.<section>), or empty.
    std::string (*pool_check)(const TaskSpec& spec, const Pool& pool, bool wants_gpu) = nullptr;

    // The task file's config.<settings_key> section, parsed into the spec (empty key: none).
    std::string_view settings_key = {};
    void (*parse_settings)(detail::YamlWalker& w, const YAML::Node& node, const std::string& path,
                           TaskSpec& spec) = nullptr;
    // The task's own provision timeout for this kind (SkyPilot's config.<backend>.provision_timeout);
    // -1: none. nullptr: the kind has none.
    std::optional<std::int64_t> (*provision_timeout)(const TaskSpec& spec) = nullptr;
};

// Every kind, in BackendKind's order.
std::span<const BackendTraits> all_backend_traits();
const BackendTraits& traits_of(BackendKind kind);
// By name or alias ("k8s", "kubernetes"); nullptr when none.
const BackendTraits* find_backend_traits(std::string_view name);
// The kinds as a list for messages: "local, slurm or kubernetes" (config types).
std::string backend_type_list();
// The default preference order for a workload.
std::vector<BackendKind> default_preference(Workload workload);
// Whether `cluster` is the one `wanted` names in an infra pin (with or without the kind's prefix).
bool cluster_matches(const ClusterInventory& cluster, std::string_view wanted);

} // namespace tandem
