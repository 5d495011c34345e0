#pragma once
// The native objects of a service (`tandem serve up`): SkyPilot's `service:` section the Kubernetes way,
// with nothing of tandem's own running beside it.
//
//   Deployment <name>   the task's pod (as a Job's, restartPolicy Always) x min_replicas; rolling updates
//                       never go below the ready count (maxUnavailable 0, maxSurge 1); a readiness probe from
//                       readiness_probe (GET: httpGet; POST: an exec probe running curl/wget/python3 in the
//                       container) and a liveness probe that starts after initial_delay_seconds (SkyPilot
//                       replaces a replica whose probe fails after that grace period; the kubelet restarts it)
//   Service <name>      the port, type from the cluster's `serve_service_type` (ClusterIP by default)
//   HPA <name>          with a replica_policy that autoscales and a metric the cluster serves: a Pods metric
//                       (`serve_qps_metric`) with target_qps_per_replica as its per-pod average, the delays as
//                       scale-up/scale-down stabilization windows (autoscaling/v2; v2beta2 before 1.23)
//   Secret <name>-secrets  the task's `secrets:`, referenced by the pods
//
// Every object carries tandem.dev/service=<name>; pods also tandem.dev/service-version=<version>, so that
// `serve status` tells the replicas of an update apart. Pure: `plan` prints exactly what `serve up` creates.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/k8s/manifests.hpp"
#include "core/error.hpp"
#include "core/spec.hpp"

namespace tandem::k8s {

inline constexpr std::string_view k_service_label = "tandem.dev/service";
inline constexpr std::string_view k_service_version_label = "tandem.dev/service-version";
// On the Deployment, so that `serve status` of many services is one list of Deployments: the autoscaler's
// range ("2-4", only with an HPA) and the Service's address ("10.96.0.12:8000", written by serve up and
// update once the Service has its address; absent for a LoadBalancer, whose address comes later).
inline constexpr std::string_view k_service_autoscale_annotation = "tandem.dev/autoscale";
inline constexpr std::string_view k_service_endpoint_annotation = "tandem.dev/endpoint";

struct ServePlan {
    std::string name;           // DNS-1123 label: the Deployment's, Service's and HPA's name
    int version = 1;
    std::string service_type = "ClusterIP"; // ClusterIP, NodePort, LoadBalancer
    std::string qps_metric = "requests_per_second";
    // The cluster serves `qps_metric` for pods through the custom metrics API: without it no HPA is made
    // and the service runs min_replicas.
    bool metric_served = false;
    bool hpa_v2 = false; // autoscaling/v2 (1.23+); else v2beta2
    JobPlan pod;         // the pods' resources, image, namespace; base_name == name
};

struct ServeManifests {
    std::optional<nlohmann::json> secret;
    nlohmann::json deployment;
    nlohmann::json service;
    std::optional<nlohmann::json> hpa;
    std::vector<std::string> notes; // what the service will not do here, for plan and serve up (stderr)
};

// Whether the task's replica_policy asks for autoscaling (max_replicas above min_replicas).
bool autoscales(const ServiceSpec& service);

// The objects of `plan`. Refuses (invalid_spec) what cannot be served: no `service:` section, no single
// port to serve on, more than one node per replica, min_replicas 0 with autoscaling (an HPA keeps at
// least one), and what render_manifests refuses.
Result<ServeManifests> render_serve_manifests(const TaskSpec& spec, const ServePlan& plan, bool mask_secrets);

// In creation order (Secret, Deployment, Service, HPA) as one YAML text.
std::string to_yaml(const ServeManifests& manifests);

// "tandem.dev/service=<name>".
std::string service_selector(const std::string& name);

// A number of requests per second as a Kubernetes quantity ("2", "2500m").
std::string qps_quantity(double qps);

} // namespace tandem::k8s
