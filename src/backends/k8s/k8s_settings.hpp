#pragma once
// A `type: kubernetes` cluster's settings, read from its config.yaml entry:
//
//   - name: k8s/prod
//     type: kubernetes
//     context: prod                  # kubeconfig context; default: the current context
//     kubeconfig: ~/.kube/prod.yaml  # default: $KUBECONFIG, else ~/.kube/config
//     namespace: ml                  # default: the context's namespace
//     user: alice                    # who you are here (tandem.dev/user); default: the context's user
//     image: ubuntu:22.04            # when the task has no image_id
//     ttl_seconds_after_finished: 86400   # 0: keep finished Jobs
//     workdir_limit_mb: 100          # workdir and file_mounts together, sent to every pod
//     upload_wait_seconds: 600       # how long launch waits for the pods to take the files
//     upload_cache_claim: team-cache # a PersistentVolumeClaim (ReadWriteMany) caching uploads by content
//     serve_service_type: ClusterIP  # a service's Service: ClusterIP, NodePort or LoadBalancer
//     serve_qps_metric: requests_per_second  # the per-pod custom metric a service's HPA scales on
//
// Contexts found in the kubeconfig are clusters `k8s/<context>` without any entry (see app/session.cpp).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"

namespace tandem::k8s {

struct K8sSettings {
    std::string context;    // empty: the kubeconfig's current-context
    std::string kubeconfig; // empty: KUBECONFIG / ~/.kube/config
    std::string namespace_name;
    std::string user; // empty: the kubeconfig context's user entry name
    std::string image = "ubuntu:22.04";
    std::optional<int> ttl_seconds_after_finished = 86400;
    std::chrono::milliseconds timeout{15'000};
    std::uint64_t workdir_limit_bytes = std::uint64_t{100} * 1024 * 1024;
    int upload_wait_seconds = 600;
    std::string upload_cache_claim; // empty: every launch sends everything
    std::string serve_service_type = "ClusterIP";
    std::string serve_qps_metric = "requests_per_second";
};

Result<K8sSettings> parse_k8s_settings(const ClusterConfig& cluster, const GetEnv& getenv);

} // namespace tandem::k8s
