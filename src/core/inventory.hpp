#pragma once
// What the configured clusters offer: clusters contain pools (a Slurm partition, a Kubernetes node group
// by GPU product, the local machine). The planner reads only this; adapters fill it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tandem {

// Each kind's facts are its row in backend_traits.cpp.
enum class BackendKind { local, slurm, kubernetes };
inline constexpr std::size_t k_backend_kinds = 3;
std::string_view to_string(BackendKind kind);                               // "local", "slurm", "k8s"
std::optional<BackendKind> backend_kind_from_string(std::string_view text); // accepts "kubernetes" too

struct Pool {
    std::string name;        // partition, node group ("gpu", "H100", "local")
    std::string accelerator; // GPU type as the backend names it ("H100", "A100-80GB"); empty: no GPU
    int gpus_per_node = 0;
    int nodes_total = 0;
    int nodes_free = 0; // nodes with nothing allocated
    int gpus_free = 0;  // summed over nodes
    int gpus_total = 0;
    int cpus_per_node = 0;
    double memory_gb_per_node = 0;
    std::optional<int> max_time_minutes;     // nullopt: no limit
    std::optional<int> default_time_minutes; // Slurm's DefaultTime: what a job asking none gets
    bool is_default = false; // Slurm's default partition: preferred among equal placements, as sbatch would
    std::vector<std::string> mig_profiles; // e.g. "1g.10gb" (Kubernetes MIG "mixed" strategy)
    bool time_sliced = false;              // GPUs shared by time-slicing
    int shared_total = 0; // MIG devices plus time-sliced replicas: what a fractional request takes one of
    int shared_free = 0;  // of those, not requested by a running pod (on usable nodes)
    std::vector<std::string> node_states; // "idle:2", "mixed:1", for `infra`
};

struct ClusterInventory {
    std::string name; // "local", "slurm-a", "k8s/prod"
    BackendKind kind = BackendKind::local;
    bool reachable = true;
    std::string error;      // why not reachable
    std::string error_hint; // how to fix it, when the backend knows (a host key to trust, a token to renew)
    ErrorKind error_kind = ErrorKind::unavailable;
    std::vector<Pool> pools;
    // Whether extra sbatch options (config.slurm.sbatch_options) reach the scheduler: sbatch over SSH
    // reads them, slurmrestd does not.
    bool sbatch_options = true;
};

// The pool named `name`, or null when the cluster has none by that name (any more).
const Pool* find_pool(const ClusterInventory& inventory, std::string_view name);

struct Inventory {
    std::vector<ClusterInventory> clusters;
};

// The smallest MIG profile of `profiles` ("<slices>g.<memory>", of a GPU's 7 compute slices) that holds
// `fraction` of a GPU; nullopt when none does. The planner and the Kubernetes adapter both use it, so a
// pool the planner accepts is one the adapter can render.
std::optional<std::string> mig_profile_for(double fraction, const std::vector<std::string>& profiles);

// The JSON shape `infra --json` documents for a pool; also how backends cache their inventory.
nlohmann::json to_json(const Pool& pool);
std::optional<Pool> pool_from_json(const nlohmann::json& j);

} // namespace tandem
