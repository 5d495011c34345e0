#pragma once
// The one shape of a cluster setting's error, for every backend's settings parser:
// "config.yaml:12:5: clusters.NAME.FIELD: message".

#include <string>

#include "core/config.hpp"

namespace tandem::backends {

// "FILE:LINE:COL: " of the cluster's entry, or "" when it came from no file (a discovered kubeconfig).
std::string config_where(const ClusterConfig& cluster);
Error config_error(const ClusterConfig& cluster, const std::string& field, const std::string& message);

} // namespace tandem::backends
