#pragma once
// Kubernetes nodes and pods -> tandem pools (pure: no I/O). The caller lists the nodes and the
// non-terminated pods of the whole cluster (fieldSelector status.phase!=Succeeded,status.phase!=Failed;
// terminated pods are skipped here anyway) and passes both lists.
//
// A pool is the set of nodes sharing a GPU product label value (the most specific label present:
// nvidia.com/gpu.product, cloud.google.com/gke-accelerator, karpenter.k8s.aws/instance-gpu-name,
// gpu.nvidia.com/class). Pool::name is that value as is ("NVIDIA-H100-80GB-HBM3"), so `infra` shows what
// the cluster says; Pool::accelerator is its canonical short name ("H100"), which is what the planner
// compares (case-insensitively, exactly) with a spec's accelerator: see canonical_accelerator(). Nodes
// without GPUs form the pool "cpu"; GPU nodes without any product label form the pool "gpu" whose
// accelerator is "unknown-gpu" (so a plan says "needs H100, pool has unknown-gpu").
//
// Per-node facts (GPUs, CPUs, memory) are the smallest node's, as for Slurm partitions, so a placement that
// fits the pool fits any node of it. Only usable nodes (Ready and not cordoned) count towards free GPUs
// and free nodes; every node counts towards the totals.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/inventory.hpp"

namespace tandem::k8s {

// The node labels that name a GPU product, most specific first. A pool is named by the value of the first
// one a node has; a Job placed on pool P can select its nodes with a node affinity whose terms (ORed) are
// "<key> In [P]" for each of these keys.
inline constexpr std::array<std::string_view, 4> k_gpu_product_labels{
    "nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name",
    "gpu.nvidia.com/class"};

ClusterInventory pools_from(const std::string& cluster, const nlohmann::json& node_list,
                            const nlohmann::json& pod_list);

// A GPU product label value -> the short name tandem specs use: "NVIDIA-H100-80GB-HBM3" -> "H100",
// "NVIDIA-A100-SXM4-80GB" -> "A100-80GB", "nvidia-tesla-t4" -> "T4", "A100_NVLINK_80GB" -> "A100-80GB".
// Unrecognised names are upper-cased without vendor prefix or sharing suffix, as SkyPilot does:
// "NVIDIA-GeForce-RTX-4090-SHARED" -> "RTX4090".
std::string canonical_accelerator(std::string_view label_value);

// A Kubernetes resource quantity ("7500m", "16Gi", "1e3", "128974848", "1.5M") -> its value. nullopt when
// the text is not a quantity.
std::optional<double> parse_quantity(std::string_view text);

} // namespace tandem::k8s
