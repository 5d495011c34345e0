#pragma once
// Slurm partitions and nodes -> tandem pools. A pool is a partition; its per-node facts (GPUs, CPUs,
// memory) are those of its smallest node, so a placement that fits the pool fits any node of it. Free GPUs
// are summed over usable nodes (not down or drained); free nodes are idle ones.

#include <string>
#include <utility>
#include <vector>

#include "backends/slurm/slurm_model.hpp"
#include "core/inventory.hpp"

namespace tandem::slurm {

// "gpu:h100:8(S:0-1)" -> {"h100", 8}; "gpu:8" -> {"", 8}; no GPU gres -> {"", 0}.
std::pair<std::string, int> gpu_gres(const std::string& gres);

// Marks `wanted` (a cluster's default_partition setting) as the default and no other; a name the cluster
// does not have is a config error naming those it has. An empty `wanted` leaves what the cluster said.
Status apply_default_partition(const std::string& cluster, const std::string& wanted,
                               std::vector<SlurmPartition>& partitions);

ClusterInventory build_inventory(const std::string& cluster, const std::vector<SlurmPartition>& partitions,
                                 const std::vector<SlurmNode>& nodes);

} // namespace tandem::slurm
