// One row per backend kind (see backend_traits.hpp). The columns of the field-support table follow
// SkyPilot's own per-cloud tables (_CLOUD_UNSUPPORTED_FEATURES in sky/clouds/slurm.py and kubernetes.py,
// and Resources.get_required_cloud_features), with SkyPilot's reasons where it gives one. A field a
// backend cannot honour is an error with a precise reason, never silently dropped; a field that costs
// nothing to leave out (a cloud hint such as `disk_tier: best`) is accepted where SkyPilot accepts it on
// that backend, and `plan` says it was ignored.

#include "core/backend_traits.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/config_section_parser.hpp"
#include "core/quantity.hpp"

namespace tandem {

namespace {

using C = SpecCondition;

constexpr std::string_view k_no_labels = "its jobs carry no labels (SkyPilot ignores them there too)";
constexpr std::string_view k_ends_by_itself =
    "a tandem job ends when its run ends; nothing stays up to stop or tear down";
constexpr std::string_view k_best = "best needs nothing";
constexpr std::string_view k_standard = "standard needs nothing";
constexpr std::string_view k_no_controller = "it orders SkyPilot managed jobs; tandem has no jobs controller";
constexpr std::string_view k_runs_once =
    "it applies to SkyPilot managed jobs (sky jobs launch); tandem runs the task once";
constexpr std::string_view k_fraction = "fractional GPUs need MIG or time-sliced GPUs (on k8s)";

// ---- local: this machine ------------------------------------------------------------------------------

constexpr FieldVerdict k_local_fields[] = {
    {C::service, "services run on Kubernetes (a Deployment behind a Service); this machine runs jobs", {}},
    {C::use_spot, "local has no spot capacity", {}},
    {C::image_id, "the task runs directly on this machine (no container runtime)", {}},
    {C::fractional_gpu, k_fraction, {}},
    {C::multi_node, "local runs one node", {}},
    {C::custom_disk_tier, {}, "this machine's disk is used as it is"},
    {C::best_network_tier, {}, "this machine's network is used as it is"},
    {C::autostop_stops, "local does not support autostop", {}},
    {C::local_disk, {}, "this machine's disk is used as it is"},
    {C::local_file_mounts, "the task runs on this machine, where its files already are: use their paths", {}},
    {C::labels, {}, k_no_labels},
    {C::disk_size, {}, "the task uses this machine's disk as it is"},
    {C::best_disk_tier, {}, k_best},
    {C::other_network_tier, {}, k_standard},
    {C::autostop_harmless, {}, k_ends_by_itself},
    {C::job_recovery, {}, k_runs_once},
    {C::max_hourly_cost, {}, "this machine has no price: always met"},
    {C::priority, {}, k_no_controller},
    {C::priority_class, {}, "a Kubernetes PriorityClass means nothing here"},
    // sweep: at most sweep_parallel elements at a time (local_backend.cpp).
};

// ---- Slurm --------------------------------------------------------------------------------------------

constexpr FieldVerdict k_slurm_fields[] = {
    {C::service, "services run on Kubernetes (a Deployment behind a Service); Slurm runs batch jobs", {}},
    {C::use_spot, "Spot instances are not supported in Slurm.", {}},
    {C::image_id, "jobs run on the node's own OS (no container runtime)", {}},
    {C::fractional_gpu, k_fraction, {}},
    {C::ports, "Opening ports is not supported in Slurm.", {}},
    {C::custom_disk_tier, "Slurm supports only disk_tier: best (as in SkyPilot)", {}},
    {C::best_network_tier, {}, "Slurm nodes keep their own network (as in SkyPilot)"},
    {C::autostop_stops, "Slurm does not support autostop.", {}},
    {C::local_disk, "Local disk is not supported on Slurm", {}},
    // file_mounts: over SSH (a cluster reached only over slurmrestd says so at submit).
    {C::labels, {}, k_no_labels},
    {C::disk_size,
     {},
     "SkyPilot's disk_size sizes a VM's disk; Slurm nodes keep theirs (node-local scratch: "
     "config.slurm.sbatch_options {tmp: SIZE})"},
    {C::best_disk_tier, {}, k_best},
    {C::other_network_tier, {}, k_standard},
    {C::autostop_harmless, {}, k_ends_by_itself},
    // job_recovery: --requeue on node failure, user-code failures run again in the allocation
    // (sbatch_script).
    {C::max_hourly_cost, {}, "Slurm has no price: always met"},
    {C::priority, {}, k_no_controller},
    {C::priority_class, {}, "a Kubernetes PriorityClass means nothing to Slurm"},
    // sweep: one job array (sbatch_script.cpp); multi-node elements are each an allocation of num_nodes.
};

// slurmrestd takes only the job fields tandem sets: sbatch options need the SSH transport.
std::string slurm_cluster_check(const TaskSpec& spec, const ClusterInventory& cluster) {
    if (!cluster.sbatch_options && !spec.slurm.sbatch_options.empty()) {
        return fmt::format("config.slurm.sbatch_options.{}: the cluster is reached over slurmrestd, which takes "
                           "no sbatch options beyond tandem's fields (reach it over ssh:)",
                           spec.slurm.sbatch_options.front().first);
    }
    return {};
}

// config.slurm.partition, cpu_partition and time.
std::string slurm_pool_check(const TaskSpec& spec, const Pool& pool, bool wants_gpu) {
    if (spec.slurm.partition && *spec.slurm.partition != pool.name) {
        return fmt::format("config.slurm.partition is {}", *spec.slurm.partition);
    }
    if (!spec.slurm.partition && spec.slurm.cpu_partition && !wants_gpu && *spec.slurm.cpu_partition != pool.name) {
        return fmt::format("config.slurm.cpu_partition is {}", *spec.slurm.cpu_partition);
    }
    if (!spec.slurm.time) {
        return {};
    }
    auto minutes = parse_slurm_time_minutes(*spec.slurm.time);
    if (!minutes) {
        return minutes.error();
    }
    if (pool.max_time_minutes && *minutes > *pool.max_time_minutes) {
        return fmt::format("time limit {} exceeds partition limit {}", format_slurm_time(*minutes),
                           format_slurm_time(*pool.max_time_minutes));
    }
    return {};
}

std::optional<std::int64_t> slurm_provision_timeout(const TaskSpec& spec) {
    return spec.slurm.provision_timeout_seconds;
}

// ---- Kubernetes ---------------------------------------------------------------------------------------

constexpr FieldVerdict k_kubernetes_fields[] = {
    {C::use_spot, "Spot instances are not supported in Kubernetes.", {}},
    {C::custom_disk_tier, "Custom disk tiers are not supported in Kubernetes.", {}},
    {C::best_network_tier, "Custom network tier is currently not supported in Kubernetes.", {}},
    {C::autostop_stops, "Auto-stop is not supported on Kubernetes.", {}},
    {C::local_disk, {}, "pods use the node's disks as the cluster sets them up"},
    // file_mounts: over pods/exec into each pod's upload container.
    {C::disk_size,
     {},
     "SkyPilot's disk_size sizes a VM's disk; pods use the node's (ephemeral-storage: "
     "config.kubernetes.pod_config)"},
    {C::best_disk_tier, {}, k_best},
    {C::other_network_tier, {}, k_standard},
    {C::autostop_harmless, {}, k_ends_by_itself},
    // job_recovery: backoffLimit, and a podFailurePolicy from 1.26 (manifests.cpp).
    {C::max_hourly_cost, {}, "Kubernetes has no price: always met"},
    {C::priority, {}, k_no_controller},
    // sweep: one Indexed Job, 1.22+ (manifests.cpp).
    {C::multi_node_sweep,
     "an Indexed Job's index is either a node rank or a sweep element: a sweep of multi-node elements runs "
     "on "
     "Slurm",
     {}},
};

std::optional<std::int64_t> kubernetes_provision_timeout(const TaskSpec& spec) {
    return spec.kubernetes.provision_timeout_seconds;
}

constexpr std::string_view k_kubernetes_aliases[] = {"kubernetes"};

const std::array<BackendTraits, k_backend_kinds> k_rows{{
    {.kind = BackendKind::local,
     .name = "local",
     .aliases = {},
     .config_type = "local",
     .fields = k_local_fields,
     .cluster_prefix = {},
     .pins_cluster = false,
     .starts_without_idle_nodes = true,
     .rank_multi_node = 2,
     .rank_shared_gpu = 2,
     .rank_other = 2},
    {.kind = BackendKind::slurm,
     .name = "slurm",
     .aliases = {},
     .config_type = "slurm",
     .fields = k_slurm_fields,
     .cluster_prefix = {},
     .rank_multi_node = 0,
     .rank_shared_gpu = 1,
     .rank_other = 0,
     .cluster_check = slurm_cluster_check,
     .pool_check = slurm_pool_check,
     .settings_key = "slurm",
     .parse_settings = detail::parse_slurm_settings,
     .provision_timeout = slurm_provision_timeout},
    {.kind = BackendKind::kubernetes,
     .name = "k8s",
     .aliases = k_kubernetes_aliases,
     .config_type = "kubernetes",
     .fields = k_kubernetes_fields,
     .cluster_prefix = "k8s/",
     .ranks_share_nodes = true,
     .rank_multi_node = 1,
     .rank_shared_gpu = 0,
     .rank_other = 1,
     .settings_key = "kubernetes",
     .parse_settings = detail::parse_kubernetes_settings,
     .provision_timeout = kubernetes_provision_timeout},
}};

int rank_for(const BackendTraits& t, Workload workload) {
    switch (workload) {
    case Workload::multi_node:
        return t.rank_multi_node;
    case Workload::shared_gpu:
        return t.rank_shared_gpu;
    case Workload::other:
        break;
    }
    return t.rank_other;
}

} // namespace

std::span<const BackendTraits> all_backend_traits() {
    return k_rows;
}

const BackendTraits& traits_of(BackendKind kind) {
    return k_rows[static_cast<std::size_t>(kind)];
}

const BackendTraits* find_backend_traits(std::string_view name) {
    for (const auto& t : k_rows) {
        if (t.name == name || std::find(t.aliases.begin(), t.aliases.end(), name) != t.aliases.end()) {
            return &t;
        }
    }
    return nullptr;
}

std::string backend_type_list() {
    std::string out;
    for (std::size_t i = 0; i < k_rows.size(); ++i) {
        out += i == 0 ? "" : i + 1 == k_rows.size() ? " or " : ", ";
        out += k_rows[i].config_type;
    }
    return out;
}

std::vector<BackendKind> default_preference(Workload workload) {
    std::vector<const BackendTraits*> rows;
    for (const auto& t : k_rows) {
        rows.push_back(&t);
    }
    std::stable_sort(rows.begin(), rows.end(), [workload](const BackendTraits* a, const BackendTraits* b) {
        return rank_for(*a, workload) < rank_for(*b, workload);
    });
    std::vector<BackendKind> out;
    for (const auto* t : rows) {
        out.push_back(t->kind);
    }
    return out;
}

bool cluster_matches(const ClusterInventory& cluster, std::string_view wanted) {
    const std::string_view name = cluster.name;
    const std::string_view prefix = traits_of(cluster.kind).cluster_prefix;
    return name == wanted ||
           (!prefix.empty() && name.starts_with(prefix) && name.substr(prefix.size()) == wanted);
}

} // namespace tandem
