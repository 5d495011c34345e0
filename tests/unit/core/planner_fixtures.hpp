#pragma once
// Builders and lookups shared by the planner tests.

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/planner.hpp"
#include "core/quantity.hpp"

namespace planner_test {

using namespace tandem;

inline Pool cpu_pool(std::string name, int nodes_total = 1, int nodes_free = 1) {
    Pool p;
    p.name = std::move(name);
    p.nodes_total = nodes_total;
    p.nodes_free = nodes_free;
    return p;
}

// A GPU pool whose free GPUs are exactly those of its idle nodes.
inline Pool gpu_pool(std::string name, std::string accelerator, int gpus_per_node, int nodes_total,
                     int nodes_free) {
    Pool p = cpu_pool(std::move(name), nodes_total, nodes_free);
    p.accelerator = std::move(accelerator);
    p.gpus_per_node = gpus_per_node;
    p.gpus_total = gpus_per_node * nodes_total;
    p.gpus_free = gpus_per_node * nodes_free;
    return p;
}

inline ClusterInventory cluster(std::string name, BackendKind kind, std::vector<Pool> pools) {
    ClusterInventory c;
    c.name = std::move(name);
    c.kind = kind;
    c.pools = std::move(pools);
    return c;
}

inline Resources with_accelerators(std::vector<Accelerator> accelerators, bool ordered = true) {
    Resources r;
    r.accelerators = std::move(accelerators);
    r.accelerators_ordered = ordered;
    return r;
}

inline TaskSpec task(Resources resources = {}) {
    TaskSpec spec;
    spec.name = "train";
    spec.run = "python train.py";
    spec.resources = std::move(resources);
    return spec;
}

inline InfraPin pin(std::string kind, std::string cluster_name = {}, std::string pool = {}) {
    return InfraPin{std::move(kind), std::move(cluster_name), std::move(pool)};
}

// "cluster/pool" of every placement, best first.
inline std::vector<std::string> ranked(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& placement : p.placements) {
        out.push_back(placement.cluster + "/" + placement.pool);
    }
    return out;
}

inline const Placement* placement_at(const Plan& p, const std::string& cluster_name,
                                     const std::string& pool) {
    for (const auto& placement : p.placements) {
        if (placement.cluster == cluster_name && placement.pool == pool) {
            return &placement;
        }
    }
    return nullptr;
}

// Every rejection of (cluster, pool); pool "" means the whole cluster.
inline std::vector<Rejection> rejections_of(const Plan& p, const std::string& cluster_name,
                                            const std::string& pool) {
    std::vector<Rejection> out;
    for (const auto& r : p.rejections) {
        if (r.cluster == cluster_name && r.pool == pool) {
            out.push_back(r);
        }
    }
    return out;
}

// The single reason (cluster, pool) was turned down for; fails the test when there is not exactly one.
inline std::string reason_of(const Plan& p, const std::string& cluster_name, const std::string& pool) {
    const auto found = rejections_of(p, cluster_name, pool);
    REQUIRE(found.size() == 1);
    return found.front().reason;
}

inline double component(const Placement& placement, const std::string& name) {
    for (const auto& part : placement.breakdown) {
        if (part.name == name) {
            return part.value;
        }
    }
    FAIL("no score component " << name);
    return 0;
}

} // namespace planner_test
