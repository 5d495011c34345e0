#pragma once
// Services (`tandem serve`): what a backend that serves reports of one, in tandem's own terms. The cluster
// holds a service's whole state; the store only remembers where it runs (store::ServiceRecord).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

// A service name made a DNS-1123 label (lower case, [a-z0-9-], starting with a letter, at most 50
// characters so ReplicaSet and pod names built from it fit); nullopt when nothing usable is left.
std::optional<std::string> service_object_name(const std::string& name);

// Where a service lives on its cluster.
struct ServiceRef {
    std::string name;
    std::string namespace_name;
};

// What serve_up and serve_update did: the namespace the service lives in, and what it will not do there
// (for stderr: no autoscaler without the metric, a clamped window, ...).
struct ServeOutcome {
    std::string namespace_name;
    std::vector<std::string> notes;
};

// One replica (a pod).
struct ReplicaView {
    std::string pod;
    int version = 0;     // the service version its pod template came from
    std::string state;   // READY, STARTING, NOT_READY, FAILED, TERMINATING, PENDING
    std::string reason;  // why it is not ready (a probe's failure, a waiting reason, the scheduler's word)
    std::string address; // the pod's IP
    std::string node;
    int restarts = 0;
    std::int64_t created_at = 0;
};

struct ServiceView {
    std::string name;
    bool exists = false;  // the cluster still has its Deployment
    int version = 0;      // the Deployment's current version
    int desired = 0;      // the Deployment's replicas
    int ready = 0;        // ready replicas (any version)
    int updated = 0;      // replicas of the current version
    std::optional<int> min_replicas, max_replicas; // from the autoscaler, when there is one
    std::optional<double> current_qps;             // the autoscaler's current per-pod average
    std::string endpoint;                          // "10.96.0.12:8000", "<pending>", "" when none
    std::string status;   // READY, STARTING, UPDATING, NOT_READY, NO_REPLICAS, GONE
    std::string reason;   // why it is not READY (the first replica's reason, a Deployment condition)
    std::int64_t created_at = 0;
    std::vector<int> old_versions;     // versions of replicas still running during an update (when read)
    std::vector<ReplicaView> replicas; // only when asked for
};

} // namespace tandem
