// The planner turns spec x inventory x policy into ranked placements. It is pure so that `tandem plan`
// can show exactly what `launch` would decide, and so every rule is unit-testable without a cluster.
//
// Feasibility is a chain of yes/no checks; the first one that fails becomes the rejection reason. Checks
// that depend only on the cluster (kind or name pinned away, a field the backend kind cannot honour) are
// reported once per cluster and option with an empty pool, so a 200-partition cluster that cannot run a
// task does not print 200 identical lines. Everything else is reported per (pool, option).
//
// Ranking: tier first (an `ordered` alternative or an accelerator list is a strict preference, so the
// first viable tier wins whatever the scores), then score. Score components, all in one breakdown:
//   starts_now          +100  the pool has free capacity for the whole request right now. It dominates:
//                             waiting in a queue costs more than any backend or fit preference.
//   backend_preference  +30/+20/+10 by the position of the cluster's kind in the policy list that fits
//                             the request (multi-node, shared/fractional, or default).
//   gpu_fit             0..-20  the share of each node's GPUs left unused (-20 for a GPU pool when no
//                             GPU is wanted), so a 2-GPU task goes to 2-GPU nodes, not 8-GPU ones.
//                             Fractional requests share one GPU and leave the rest usable: 0.
//   headroom            0..+10  only when the task must wait: the free share of the pool's relevant
//                             capacity, a cheap proxy for which queue will drain first.

#include "core/planner.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/backend_support.hpp"
#include "core/quantity.hpp"

namespace tandem {

namespace {

constexpr double k_starts_now_bonus = 100;
constexpr std::array<double, 3> k_preference_bonus{30, 20, 10};
constexpr double k_gpu_waste_penalty = 20;
constexpr double k_headroom_bonus = 10;

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// ---- Per-option facts that do not depend on the pool -------------------------------------------------

struct Candidate {
    int index = 0;
    const ResourceOption* option = nullptr;
    const Accelerator* accelerator = nullptr; // nullptr: no GPU wanted
    std::array<std::string, k_backend_kinds> unsupported;   // by BackendKind: joined reasons, empty when runnable
    std::array<std::vector<std::string>, k_backend_kinds> ignored; // by BackendKind: fields accepted without effect
    const std::vector<BackendKind>* preference = nullptr;
};

std::vector<Candidate> make_candidates(const TaskSpec& spec, const std::vector<ResourceOption>& options,
                                       const PlannerPolicy& policy) {
    std::vector<Candidate> out;
    out.reserve(options.size());
    for (std::size_t i = 0; i < options.size(); ++i) {
        const auto& option = options[i];
        Candidate c;
        c.index = static_cast<int>(i);
        c.option = &option;
        c.accelerator =
            option.resources.accelerators.empty() ? nullptr : &option.resources.accelerators.front();
        for (const auto& t : all_backend_traits()) {
            const auto kind = t.kind;
            std::string& joined = c.unsupported[static_cast<std::size_t>(kind)];
            for (const auto& u : unsupported_fields(spec, option.resources, kind)) {
                joined += joined.empty() ? u.reason : "; " + u.reason;
            }
            for (const auto& u : ignored_fields(spec, option.resources, kind)) {
                c.ignored[static_cast<std::size_t>(kind)].push_back(u.field + ": " + u.reason);
            }
        }
        const bool fractional = c.accelerator != nullptr && c.accelerator->fractional();
        c.preference = spec.num_nodes > 1 ? &policy.prefer_multi_node
                       : fractional       ? &policy.prefer_shared
                                          : &policy.prefer_default;
        out.push_back(std::move(c));
    }
    return out;
}

// ---- Feasibility -------------------------------------------------------------------------------------

// Why no pool of `cluster` can take this option, or empty.
std::string cluster_mismatch(const Candidate& c, const TaskSpec& spec, const ClusterInventory& cluster) {
    if (const auto& t = traits_of(cluster.kind); t.cluster_check != nullptr) {
        if (auto why = t.cluster_check(spec, cluster); !why.empty()) {
            return why;
        }
    }
    if (const auto& pin = c.option->resources.infra) {
        const auto kind = backend_kind_from_string(pin->kind);
        if (!kind || *kind != cluster.kind ||
            (!pin->cluster.empty() && !cluster_matches(cluster, pin->cluster))) {
            return "infra pinned to " + format_infra(*pin);
        }
    }
    return c.unsupported[static_cast<std::size_t>(cluster.kind)];
}

std::string largest_mig_profile(const std::vector<std::string>& profiles) {
    std::string best;
    int most = 0;
    for (const auto& profile : profiles) {
        int slices = 0;
        if (std::sscanf(profile.c_str(), "%dg", &slices) == 1 && slices > most) {
            most = slices;
            best = profile;
        }
    }
    return best.empty() ? "none" : best;
}

std::string accelerator_mismatch(const Accelerator& want, const Pool& pool) {
    // A pool of MIG slices only (every GPU partitioned) has no whole GPU but serves fractions.
    const bool sliced = want.fractional() && (pool.time_sliced || !pool.mig_profiles.empty());
    if (pool.accelerator.empty() || (pool.gpus_per_node <= 0 && !sliced)) {
        return fmt::format("needs {}:{}, pool has no GPUs", want.name, want.count);
    }
    if (!iequals(want.name, pool.accelerator)) {
        return fmt::format("needs {}, pool has {}", want.name, pool.accelerator);
    }
    if (want.fractional()) {
        if (!pool.time_sliced && pool.mig_profiles.empty()) {
            return fmt::format("fractional {}:{} needs MIG or time-sliced GPUs", want.name, want.count);
        }
        if (!pool.time_sliced && !mig_profile_for(want.count, pool.mig_profiles)) {
            return fmt::format("needs {} of a GPU, largest MIG slice here is {}", want.count,
                               largest_mig_profile(pool.mig_profiles));
        }
    } else if (pool.gpus_per_node < want.count) {
        return fmt::format("needs {}:{} per node, pool has {} per node", want.name, want.count,
                           pool.gpus_per_node);
    }
    return {};
}

// Why `pool` cannot take this option, or empty. Cheap when the pool fits: no allocation on that path.
std::string pool_mismatch(const Candidate& c, const TaskSpec& spec, const BackendTraits& kind, const Pool& pool) {
    const Resources& r = c.option->resources;
    if (r.infra && !r.infra->pool.empty() && r.infra->pool != pool.name) {
        return "infra pinned to " + format_infra(*r.infra);
    }
    if (kind.ranks_share_nodes) {
        // A rank is a pod, and pods of one job may share a node: only the GPUs must add up.
        const Accelerator* a = c.accelerator;
        if (a != nullptr && !a->fractional() && pool.gpus_total > 0 &&
            pool.gpus_total < a->count * spec.num_nodes) {
            return fmt::format("needs {} GPUs for {} pods, pool has {}", a->count * spec.num_nodes,
                               spec.num_nodes, pool.gpus_total);
        }
    } else if (pool.nodes_total < spec.num_nodes) {
        return fmt::format("needs {} nodes, pool has {}", spec.num_nodes, pool.nodes_total);
    }
    if (c.accelerator != nullptr) {
        if (auto why = accelerator_mismatch(*c.accelerator, pool); !why.empty()) {
            return why;
        }
    }
    // A pool reporting 0 does not know; let the backend decide rather than reject on a missing number.
    if (r.cpus && pool.cpus_per_node > 0 && pool.cpus_per_node < r.cpus->value) {
        return fmt::format("needs {} cpus per node, pool has {}", r.cpus->value, pool.cpus_per_node);
    }
    if (r.memory_gb && pool.memory_gb_per_node > 0 && pool.memory_gb_per_node < r.memory_gb->value) {
        return fmt::format("needs {} GB memory per node, pool has {} GB", r.memory_gb->value,
                           pool.memory_gb_per_node);
    }
    // `config.<kind>.*` is addressed to that kind; other backends ignore it.
    return kind.pool_check != nullptr ? kind.pool_check(spec, pool, c.accelerator != nullptr) : std::string();
}

// ---- Scoring -----------------------------------------------------------------------------------------

bool can_start_now(const Accelerator* want, const Pool& pool, BackendKind kind, int num_nodes) {
    if (want == nullptr) {
        // The local backend starts processes immediately; elsewhere a CPU task counts on idle nodes.
        return traits_of(kind).starts_without_idle_nodes || pool.nodes_free >= num_nodes;
    }
    if (want->fractional()) { // one MIG device or time-sliced replica per rank
        return pool.shared_free >= num_nodes;
    }
    // Asking for every GPU of a node needs whole idle nodes; a smaller request can share a node.
    if (!want->fractional() && want->count >= pool.gpus_per_node) {
        return pool.nodes_free >= num_nodes;
    }
    return pool.gpus_free >= want->count * num_nodes;
}

double preference_bonus(const std::vector<BackendKind>& order, BackendKind kind) {
    const auto it = std::find(order.begin(), order.end(), kind);
    const auto position = static_cast<std::size_t>(it - order.begin());
    return position < k_preference_bonus.size() ? k_preference_bonus[position] : 0;
}

double gpu_fit(const Accelerator* want, const Pool& pool) {
    const bool has_gpus = pool.gpus_per_node > 0 || !pool.mig_profiles.empty();
    if (want == nullptr) { // a CPU task on GPU nodes (whole or MIG-sliced) wastes them
        return has_gpus ? -k_gpu_waste_penalty : 0;
    }
    if (pool.gpus_per_node <= 0) {
        return 0;
    }
    if (want->fractional()) {
        return 0;
    }
    const double unused = std::max(0.0, pool.gpus_per_node - want->count);
    return -k_gpu_waste_penalty * unused / pool.gpus_per_node;
}

double free_share(const Accelerator* want, const Pool& pool) {
    if (want != nullptr) {
        return pool.gpus_total > 0 ? static_cast<double>(pool.gpus_free) / pool.gpus_total : 0;
    }
    return pool.nodes_total > 0 ? static_cast<double>(pool.nodes_free) / pool.nodes_total : 0;
}

Placement place(const Candidate& c, const TaskSpec& spec, const ClusterInventory& cluster, const Pool& pool) {
    Placement p;
    p.cluster = cluster.name;
    p.kind = cluster.kind;
    p.pool = pool.name;
    p.option_index = c.index;
    p.option_label = c.option->label;
    p.tier = c.option->tier;
    p.starts_now = can_start_now(c.accelerator, pool, cluster.kind, spec.num_nodes);
    p.default_pool = pool.is_default;
    const double headroom =
        p.starts_now ? 0 : k_headroom_bonus * std::clamp(free_share(c.accelerator, pool), 0.0, 1.0);
    p.breakdown = {
        {"starts_now", p.starts_now ? k_starts_now_bonus : 0},
        {"backend_preference", preference_bonus(*c.preference, cluster.kind)},
        {"gpu_fit", gpu_fit(c.accelerator, pool)},
        {"headroom", headroom},
    };
    for (const auto& part : p.breakdown) {
        p.score += part.value;
    }
    p.ignored = c.ignored[static_cast<std::size_t>(cluster.kind)];
    return p;
}

void rank(std::vector<Placement>& placements) {
    std::stable_sort(placements.begin(), placements.end(), [](const Placement& a, const Placement& b) {
        if (a.tier != b.tier) {
            return a.tier < b.tier;
        }
        if (a.score != b.score) {
            return a.score > b.score;
        }
        if (a.cluster != b.cluster) {
            return a.cluster < b.cluster;
        }
        if (a.default_pool != b.default_pool) { // where a plain sbatch would go
            return a.default_pool;
        }
        if (a.pool != b.pool) {
            return a.pool < b.pool;
        }
        return a.option_index < b.option_index;
    });
}

} // namespace

Plan plan(const TaskSpec& spec, const Inventory& inventory, const PlannerPolicy& policy) {
    const std::vector<ResourceOption> options = spec.options();
    const std::vector<Candidate> candidates = make_candidates(spec, options, policy);

    Plan out;
    for (const auto& cluster : inventory.clusters) {
        if (!cluster.reachable) {
            std::string why = cluster.error.empty() ? "unreachable" : "unreachable: " + cluster.error;
            out.rejections.push_back({cluster.name, {}, {}, std::move(why)});
            continue;
        }
        if (cluster.pools.empty()) {
            out.rejections.push_back({cluster.name, {}, {}, "cluster reports no pools"});
            continue;
        }
        for (const auto& c : candidates) {
            if (!c.option->resources.cloud_only.empty()) {
                continue; // one rejection for the option below, not one per cluster
            }
            if (auto why = cluster_mismatch(c, spec, cluster); !why.empty()) {
                out.rejections.push_back({cluster.name, {}, c.option->label, std::move(why)});
                continue;
            }
            const BackendTraits& kind = traits_of(cluster.kind);
            for (const auto& pool : cluster.pools) {
                if (auto why = pool_mismatch(c, spec, kind, pool); !why.empty()) {
                    out.rejections.push_back({cluster.name, pool.name, c.option->label, std::move(why)});
                    continue;
                }
                out.placements.push_back(place(c, spec, cluster, pool));
            }
        }
    }
    // An `any_of`/`ordered` alternative that needs a cloud: one row, whatever the clusters.
    for (const auto& c : candidates) {
        if (const auto& cloud = c.option->resources.cloud_only; !cloud.empty()) {
            std::string why;
            for (const auto& [field, reason] : cloud) {
                why += (why.empty() ? "" : "; ") + reason;
            }
            out.rejections.push_back({"-", {}, c.option->label, std::move(why)});
        }
    }
    rank(out.placements);
    return out;
}

} // namespace tandem
