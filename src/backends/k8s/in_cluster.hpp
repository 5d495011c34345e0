#pragma once
// In-cluster configuration, as client-go's rest.InClusterConfig: inside a pod, KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT name the API server, and the service account's token, CA certificate and
// namespace are mounted under /var/run/secrets/kubernetes.io/serviceaccount.

#include <optional>
#include <string>

#include "backends/k8s/kubeconfig.hpp"
#include "core/config.hpp"
#include "core/error.hpp"

namespace tandem::k8s {

inline constexpr const char* k_service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr const char* k_in_cluster_context = "in-cluster";

// nullopt when not in a cluster (either variable unset or empty). In a cluster, a context named
// "in-cluster" with the server https://HOST:PORT, the token read from ROOT/token, ROOT/ca.crt as the CA
// and ROOT/namespace (else "default"). A missing token or CA file is an error (ErrorKind::config).
Result<std::optional<KubeContext>> in_cluster_context(const GetEnv& getenv,
                                                      const std::string& root = k_service_account_dir);

} // namespace tandem::k8s
