#include "backends/slurm/slurm_inventory.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace tandem::slurm {

namespace {

bool node_free(const SlurmNode& n) {
    return n.state == "idle" && n.alloc_cpus == 0;
}

} // namespace

std::pair<std::string, int> gpu_gres(const std::string& gres) {
    std::stringstream items(gres);
    for (std::string item; std::getline(items, item, ',');) {
        if (item.rfind("gpu:", 0) != 0) {
            continue;
        }
        item = item.substr(0, item.find('('));
        auto last = item.rfind(':');
        int count = std::atoi(item.c_str() + last + 1);
        std::string type = last > 3 ? item.substr(4, last - 4) : std::string();
        return {type, count};
    }
    return {"", 0};
}

Status apply_default_partition(const std::string& cluster, const std::string& wanted,
                               std::vector<SlurmPartition>& partitions) {
    if (wanted.empty()) {
        return {};
    }
    const bool known = std::any_of(partitions.begin(), partitions.end(),
                                   [&](const SlurmPartition& p) { return p.name == wanted; });
    if (!known) {
        std::string names;
        for (const auto& p : partitions) {
            names += (names.empty() ? "" : ", ") + p.name;
        }
        return fail(ErrorKind::config,
                    fmt::format("cluster {}: default_partition {} is not a partition of the cluster (it has {})",
                                cluster, wanted, names.empty() ? "none" : names));
    }
    for (auto& p : partitions) {
        p.is_default = p.name == wanted;
    }
    return {};
}

ClusterInventory build_inventory(const std::string& cluster, const std::vector<SlurmPartition>& partitions,
                                 const std::vector<SlurmNode>& nodes) {
    std::map<std::string, const SlurmNode*> by_name;
    for (const auto& n : nodes) {
        by_name[n.name] = &n;
    }
    ClusterInventory inv;
    inv.name = cluster;
    inv.kind = BackendKind::slurm;
    for (const auto& part : partitions) {
        Pool pool;
        pool.name = part.name;
        pool.max_time_minutes = part.max_time_minutes;
        pool.default_time_minutes = part.default_time_minutes;
        pool.is_default = part.is_default;
        std::map<std::string, int> states;
        bool first = true;
        for (const auto& name : part.nodes) {
            auto it = by_name.find(name);
            if (it == by_name.end()) {
                continue;
            }
            const SlurmNode& n = *it->second;
            auto [type, gpus] = gpu_gres(n.gres);
            auto used = gpu_gres(n.gres_used).second;
            const bool usable = n.state != "down" && n.state.find("drain") == std::string::npos;
            if (first) { // a pool is a partition; per-node facts are taken as the smallest node's
                pool.accelerator = type;
                pool.gpus_per_node = gpus;
                pool.cpus_per_node = n.cpus;
                pool.memory_gb_per_node = n.real_memory_mb / 1024.0;
                first = false;
            } else {
                pool.gpus_per_node = std::min(pool.gpus_per_node, gpus);
                pool.cpus_per_node = std::min(pool.cpus_per_node, n.cpus);
                pool.memory_gb_per_node = std::min(pool.memory_gb_per_node, n.real_memory_mb / 1024.0);
            }
            ++pool.nodes_total;
            pool.gpus_total += gpus;
            if (usable) {
                pool.gpus_free += std::max(0, gpus - used);
                pool.nodes_free += node_free(n) ? 1 : 0;
            }
            ++states[n.state];
        }
        for (const auto& [state, count] : states) {
            pool.node_states.push_back(fmt::format("{}:{}", state, count));
        }
        inv.pools.push_back(std::move(pool));
    }
    return inv;
}

} // namespace tandem::slurm
