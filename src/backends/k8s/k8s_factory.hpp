#pragma once
// Making Kubernetes backends from config entries, and finding the contexts a kubeconfig offers.

#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"

namespace tandem::k8s {

// The backend for a `type: kubernetes` entry: its kubeconfig context resolved (file, KUBECONFIG or
// ~/.kube/config; "in-cluster" for the pod's service account), nothing contacted yet.
Result<std::unique_ptr<Backend>> make_k8s_backend(const ClusterConfig& cluster, const std::string& state_dir,
                                                  const GetEnv& getenv);

// One cluster `k8s/<context>` per context of the user's kubeconfig (and `k8s/in-cluster` inside a pod),
// for configs that name no kubernetes cluster themselves. A kubeconfig that cannot be read gives none:
// commands that do not need Kubernetes must not fail on it (`tandem check` reports it).
std::vector<ClusterConfig> discover_k8s_clusters(const GetEnv& getenv);

} // namespace tandem::k8s
