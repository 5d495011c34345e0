#pragma once
// The planner is a pure function: spec x inventory x policy -> ranked placements, and for every pool it
// turned down, the reason. No I/O; `tandem plan` prints exactly what this returns.

#include <string>
#include <vector>

#include "core/backend_traits.hpp"
#include "core/inventory.hpp"
#include "core/spec.hpp"

namespace tandem {

struct PlannerPolicy {
    // Backend kinds in order of preference, used as a score component. The documented default puts
    // Slurm first for exclusive multi-node work and Kubernetes first for shared/fractional GPUs.
    // The defaults are the ranks in each kind's row (backend_traits.cpp).
    std::vector<BackendKind> prefer_multi_node = default_preference(Workload::multi_node);
    std::vector<BackendKind> prefer_shared = default_preference(Workload::shared_gpu);
    std::vector<BackendKind> prefer_default = default_preference(Workload::other);
};

struct ScoreComponent {
    std::string name; // "starts_now", "backend_preference", "gpu_fit", ...
    double value = 0;
};

struct Placement {
    std::string cluster;
    BackendKind kind = BackendKind::local;
    std::string pool;
    int option_index = 0; // into spec.options()
    std::string option_label;
    int tier = 0;
    double score = 0;
    std::vector<ScoreComponent> breakdown;
    bool starts_now = false;
    bool default_pool = false; // the cluster's default (Slurm partition): wins a tie
    std::vector<std::string> ignored; // "resources.disk_tier: ignored on slurm: best needs nothing"
};

struct Rejection {
    std::string cluster;
    std::string pool; // empty: the whole cluster (unreachable, pinned away)
    std::string option_label;
    std::string reason;
};

struct Plan {
    std::vector<Placement> placements; // best first; empty when nothing fits
    std::vector<Rejection> rejections;
};

Plan plan(const TaskSpec& spec, const Inventory& inventory, const PlannerPolicy& policy = {});

} // namespace tandem
