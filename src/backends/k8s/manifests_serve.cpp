// A service's Deployment, Service and HorizontalPodAutoscaler (serve_manifests.hpp).

#include "backends/k8s/serve_manifests.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "backends/k8s/labels.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

tl::unexpected<Error> refuse(std::string message) {
    return fail(ErrorKind::invalid_spec, "k8s: " + std::move(message));
}

// A POST readiness probe runs in the container (a kubelet probes only with GET): the first of curl,
// python3 and wget the image has. Fixed text; the URL, body, timeout and headers come as arguments.
constexpr std::string_view k_post_probe = R"sh(u=$1 b=$2 t=$3
shift 3
if command -v curl >/dev/null 2>&1; then
  n=$#
  while [ "$n" -gt 0 ]; do set -- "$@" -H "$1"; shift; n=$((n - 1)); done
  exec curl -fsS -o /dev/null -m "$t" -X POST -H 'Content-Type: application/json' "$@" --data-binary "$b" "$u"
fi
if command -v python3 >/dev/null 2>&1; then
  exec python3 -c 'import sys, urllib.request as r
h = {"Content-Type": "application/json"}
for x in sys.argv[4:]:
    k, _, v = x.partition(":")
    h[k.strip()] = v.strip()
try:
    r.urlopen(r.Request(sys.argv[1], data=sys.argv[2].encode(), headers=h, method="POST"), timeout=float(sys.argv[3]))
except Exception as e:
    print(e)
    sys.exit(1)' "$u" "$b" "$t" "$@"
fi
if command -v wget >/dev/null 2>&1; then
  n=$#
  while [ "$n" -gt 0 ]; do set -- "$@" --header "$1"; shift; n=$((n - 1)); done
  exec wget -q -O /dev/null -T "$t" --header 'Content-Type: application/json' "$@" --post-data "$b" "$u"
fi
echo "the POST readiness probe needs curl, python3 or wget in the image" >&2
exit 1)sh";

// The stabilization window the API accepts (0..3600 s).
constexpr std::int64_t k_max_window = 3600;

json probe_action(const ServiceSpec& service, int port) {
    const auto& p = service.readiness_probe;
    if (p.post_data) {
        // The kubelet expands $(NAME) and $$ in an exec probe's command as in a container's: every `$` of
        // the script, the path, the body and the headers is written doubled.
        json command = {"/bin/sh", "-c", escape_kubelet_expansion(k_post_probe), "tandem-probe",
                        escape_kubelet_expansion(fmt::format("http://127.0.0.1:{}{}", port, p.path)),
                        escape_kubelet_expansion(p.post_data->dump()),
                        std::to_string(std::max<std::int64_t>(1, p.timeout_seconds))};
        for (const auto& [name, value] : p.headers) {
            command.push_back(escape_kubelet_expansion(name + ": " + value));
        }
        return {{"exec", {{"command", command}}}};
    }
    json get = {{"path", p.path}, {"port", port}, {"scheme", "HTTP"}};
    if (!p.headers.empty()) {
        json headers = json::array();
        for (const auto& [name, value] : p.headers) {
            headers.push_back({{"name", name}, {"value", value}});
        }
        get["httpHeaders"] = headers;
    }
    return {{"httpGet", get}};
}

// Readiness: from the start, every 5 s; liveness: from initial_delay_seconds on, so a replica that stops
// answering after its grace period is restarted (SkyPilot replaces it).
void add_probes(json& container, const ServiceSpec& service, int port) {
    const auto timeout = static_cast<int>(std::clamp<std::int64_t>(service.readiness_probe.timeout_seconds, 1, 3600));
    json readiness = probe_action(service, port);
    readiness["periodSeconds"] = 5;
    readiness["timeoutSeconds"] = timeout;
    readiness["successThreshold"] = 1;
    readiness["failureThreshold"] = 3;
    json liveness = probe_action(service, port);
    liveness["initialDelaySeconds"] =
        static_cast<int>(std::clamp<std::int64_t>(service.readiness_probe.initial_delay_seconds, 0, 86400));
    liveness["periodSeconds"] = std::max(10, timeout);
    liveness["timeoutSeconds"] = timeout;
    liveness["failureThreshold"] = 3;
    container["readinessProbe"] = readiness;
    container["livenessProbe"] = liveness;
}

// A port entry's containerPort (pod_config may hold anything there); 0 when it has none.
int container_port_of(const json& p) {
    if (!p.is_object()) {
        return 0;
    }
    auto it = p.find("containerPort");
    return it != p.end() && it->is_number_integer() ? it->get<int>() : 0;
}

json service_labels(const TaskSpec& spec, const ServePlan& plan) {
    json labels = json::object();
    for (const auto& [k, v] : spec.resources.labels) {
        labels[k] = v;
    }
    labels[std::string(k_managed_by_key)] = std::string(k_managed_by_value);
    labels[std::string(k_service_label)] = plan.name;
    return labels;
}

// The Job's pod, made a replica: service labels instead of the job's, restarted when it exits, the
// serving port declared, the probes, and a git checkout folder of its own per pod.
Status make_replica(json& tmpl, const TaskSpec& spec, const ServePlan& plan, int port) {
    auto& labels = tmpl["metadata"]["labels"];
    for (auto key : {k_job_label, k_id_label, k_token_label, k_rank_label}) {
        labels.erase(std::string(key));
    }
    labels[std::string(k_service_label)] = plan.name;
    labels[std::string(k_service_version_label)] = std::to_string(plan.version);
    auto& pod_spec = tmpl["spec"];
    pod_spec["restartPolicy"] = "Always";
    auto& containers = pod_spec["containers"];
    if (!containers.is_array() || containers.empty() || !containers[0].is_object()) {
        return refuse("config.kubernetes.pod_config.spec.containers: the first container must be a mapping");
    }
    auto& main = containers[0];
    auto& ports = main["ports"];
    if (!ports.is_array()) {
        ports = json::array();
    }
    const bool declared = std::any_of(ports.begin(), ports.end(), [&](const json& p) {
        return container_port_of(p) == port;
    });
    if (!declared) {
        ports.push_back({{"containerPort", port}, {"protocol", "TCP"}});
    }
    for (auto& p : ports) {
        if (container_port_of(p) == port) {
            p["name"] = "http";
        }
    }
    add_probes(main, *spec.service, port);
    auto& env = main["env"];
    if (env.is_array()) {
        json out = json::array();
        out.push_back({{"name", "TANDEM_SERVICE_NAME"}, {"value", plan.name}});
        out.push_back({{"name", "TANDEM_SERVICE_VERSION"}, {"value", std::to_string(plan.version)}});
        out.push_back({{"name", "TANDEM_POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}});
        for (auto& e : env) {
            if (e.is_object() && e.contains("name") && e["name"] == "TANDEM_GIT_DIR") { // replicas may share a node's /tmp
                e["value"] = "/tmp/tandem-workdir-$(TANDEM_POD_NAME)";
            }
            out.push_back(e);
        }
        env = out;
    }
    return {};
}

json hpa_manifest(const TaskSpec& spec, const ServePlan& plan, std::vector<std::string>& notes) {
    const auto& s = *spec.service;
    auto window = [&](std::int64_t seconds, const char* field) {
        if (seconds > k_max_window) {
            notes.push_back(fmt::format("service.replica_policy.{}: {} s is above the {} s a "
                                        "HorizontalPodAutoscaler accepts; {} s is used",
                                        field, seconds, k_max_window, k_max_window));
        }
        return static_cast<int>(std::clamp<std::int64_t>(seconds, 0, k_max_window));
    };
    json metric = {{"type", "Pods"},
                   {"pods",
                    {{"metric", {{"name", plan.qps_metric}}},
                     {"target", {{"type", "AverageValue"}, {"averageValue", qps_quantity(*s.target_qps_per_replica)}}}}}};
    json behavior = {
        {"scaleUp", {{"stabilizationWindowSeconds", window(s.upscale_delay_seconds, "upscale_delay_seconds")}}},
        {"scaleDown",
         {{"stabilizationWindowSeconds", window(s.downscale_delay_seconds, "downscale_delay_seconds")}}}};
    json metadata = {{"name", plan.name}, {"namespace", plan.pod.namespace_name}, {"labels", service_labels(spec, plan)}};
    return {{"apiVersion", plan.hpa_v2 ? "autoscaling/v2" : "autoscaling/v2beta2"},
            {"kind", "HorizontalPodAutoscaler"},
            {"metadata", metadata},
            {"spec",
             {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", plan.name}}},
              {"minReplicas", s.min_replicas},
              {"maxReplicas", *s.max_replicas},
              {"metrics", json::array({metric})},
              {"behavior", behavior}}}};
}

} // namespace

bool autoscales(const ServiceSpec& service) {
    return service.target_qps_per_replica && service.max_replicas && *service.max_replicas > service.min_replicas;
}

std::string service_selector(const std::string& name) {
    return fmt::format("{}={}", k_service_label, name);
}

std::string qps_quantity(double qps) {
    const auto milli = std::max(1LL, static_cast<long long>(std::llround(qps * 1000))); // never "0"
    if (milli % 1000 == 0) {
        return std::to_string(milli / 1000);
    }
    return fmt::format("{}m", milli);
}

Result<ServeManifests> render_serve_manifests(const TaskSpec& spec, const ServePlan& plan, bool mask_secrets) {
    if (!spec.service) {
        return refuse("the task has no `service:` section (run it with `tandem launch`)");
    }
    const auto& s = *spec.service;
    if (spec.num_nodes != 1) {
        return refuse(fmt::format("num_nodes: a replica of a service is one pod; num_nodes must be 1, not {}",
                                  spec.num_nodes));
    }
    if (plan.pod.upload) {
        return refuse("workdir/file_mounts: a local workdir or file_mounts cannot reach the replicas a "
                      "Deployment starts later; use a git workdir (workdir: {url, ref}) or an image holding the code");
    }
    if (s.tls) {
        return refuse("service.tls: replicas serve plain HTTP behind the Service; TLS termination (an Ingress "
                      "or a load balancer with a certificate) is not made by tandem yet");
    }
    const auto port = s.serving_port(spec.resources);
    if (!port) {
        return refuse("service: no port to serve on: set service.ports (or one port in resources.ports)");
    }
    if (autoscales(s) && s.min_replicas < 1) {
        return refuse("service.replica_policy.min_replicas: a HorizontalPodAutoscaler keeps at least 1 replica; "
                      "scaling to zero is not supported");
    }
    ServeManifests m;
    if (!spec.secrets.empty()) {
        auto secret = secret_manifest(spec, plan.pod, mask_secrets);
        if (!secret) {
            return tl::unexpected(secret.error());
        }
        (*secret)["metadata"]["labels"] = service_labels(spec, plan);
        m.secret = std::move(*secret);
    }
    auto tmpl = task_pod_template(spec, plan.pod);
    if (!tmpl) {
        return tl::unexpected(tmpl.error());
    }
    if (auto ok = make_replica(*tmpl, spec, plan, *port); !ok) {
        return tl::unexpected(ok.error());
    }
    const bool hpa = autoscales(s) && plan.metric_served;
    if (autoscales(s) && !plan.metric_served) {
        m.notes.push_back(fmt::format("the cluster serves no custom metric pods/{} (custom.metrics.k8s.io): no "
                                      "autoscaler is made and the service runs min_replicas ({})",
                                      plan.qps_metric, s.min_replicas));
    }
    if (s.load_balancing_policy) {
        m.notes.push_back(fmt::format("service.load_balancing_policy {}: the Service spreads connections over the "
                                      "ready replicas (kube-proxy); there is no per-request balancer",
                                      *s.load_balancing_policy));
    }
    json annotations = {{std::string(k_service_version_label), std::to_string(plan.version)}};
    if (hpa) { // what `serve status` shows without reading the autoscaler
        annotations[std::string(k_service_autoscale_annotation)] =
            fmt::format("{}-{}", s.min_replicas, *s.max_replicas);
    }
    json metadata = {{"name", plan.name},
                     {"namespace", plan.pod.namespace_name},
                     {"labels", service_labels(spec, plan)},
                     {"annotations", annotations}};
    json dep_spec = {
        {"replicas", s.min_replicas},
        {"selector", {{"matchLabels", {{std::string(k_service_label), plan.name}}}}},
        {"strategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 0}, {"maxSurge", 1}}}}},
        {"revisionHistoryLimit", 3},
        {"progressDeadlineSeconds",
         static_cast<int>(std::clamp<std::int64_t>(s.readiness_probe.initial_delay_seconds + 600, 600, 86400))},
        {"template", *tmpl}};
    m.deployment = {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", metadata}, {"spec", dep_spec}};
    m.service = {{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", {{"name", plan.name}, {"namespace", plan.pod.namespace_name}, {"labels", service_labels(spec, plan)}}},
                 {"spec",
                  {{"type", plan.service_type},
                   {"selector", {{std::string(k_service_label), plan.name}}},
                   {"ports", json::array({{{"name", "http"}, {"port", *port}, {"targetPort", *port}, {"protocol", "TCP"}}})}}}};
    if (hpa) {
        m.hpa = hpa_manifest(spec, plan, m.notes);
    }
    return m;
}

std::string to_yaml(const ServeManifests& manifests) {
    std::vector<const json*> docs;
    if (manifests.secret) {
        docs.push_back(&*manifests.secret);
    }
    docs.push_back(&manifests.deployment);
    docs.push_back(&manifests.service);
    if (manifests.hpa) {
        docs.push_back(&*manifests.hpa);
    }
    return to_yaml_documents(docs);
}

} // namespace tandem::k8s
