// Services on Kubernetes (`tandem serve`): a Deployment, a Service, an HPA and a Secret made from the task
// (serve_manifests.hpp), read back for `serve status` with one list per kind of object per namespace.

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/labels.hpp"
#include "backends/k8s/serve_manifests.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

std::string apps_path(const std::string& ns) {
    return fmt::format("/apis/apps/v1/namespaces/{}/deployments", ns);
}
std::string services_path(const std::string& ns) {
    return fmt::format("/api/v1/namespaces/{}/services", ns);
}
std::string secrets_path(const std::string& ns) {
    return fmt::format("/api/v1/namespaces/{}/secrets", ns);
}
std::string hpa_path(const std::string& ns, bool v2) {
    return fmt::format("/apis/autoscaling/{}/namespaces/{}/horizontalpodautoscalers", v2 ? "v2" : "v2beta2", ns);
}
std::string pods_path(const std::string& ns) {
    return fmt::format("/api/v1/namespaces/{}/pods", ns);
}

// Every tandem service object of a namespace: "?labelSelector=tandem.dev/service".
std::string any_service_query() {
    return "?labelSelector=" + query_escape(std::string(k_service_label));
}

// Reads of one member that never throw, whatever the server sent: a missing or mistyped member is the
// fallback.
std::string text_of(const json& j, const char* key, const std::string& fallback = {}) {
    const json* v = fields::get(&j, key);
    return v != nullptr && v->is_string() ? v->get<std::string>() : fallback;
}
int number_of(const json& j, const char* key, int fallback) {
    const json* v = fields::get(&j, key);
    return v != nullptr && v->is_number_integer() ? v->get<int>() : fallback;
}

int int_at(const json& j, const char* a, const char* b) {
    const json* v = fields::at(j, a, b);
    return v != nullptr && v->is_number_integer() ? v->get<int>() : 0;
}

std::int64_t created_of(const json& object) {
    return parse_rfc3339(fields::str_at(object, "metadata", "creationTimestamp")).value_or(0);
}

int version_of(const json& object, bool label) {
    const auto text = label ? fields::str_at(object, "metadata", "labels", k_service_version_label)
                            : fields::str_at(object, "metadata", "annotations", k_service_version_label);
    try {
        return text.empty() ? 0 : std::stoi(text);
    } catch (const std::exception&) {
        return 0;
    }
}

bool pod_ready(const json& pod) {
    const json* conditions = fields::at(pod, "status", "conditions");
    for (const auto& c : conditions != nullptr && conditions->is_array() ? *conditions : json::array()) {
        if (text_of(c, "type") == "Ready") {
            return text_of(c, "status") == "True";
        }
    }
    return false;
}

// A replica's state and, when it is not ready, why (the newest probe failure of the pod among `events`).
ReplicaView replica_of(const json& pod, const std::map<std::string, std::string>& probe_failures) {
    ReplicaView r;
    r.pod = fields::str_at(pod, "metadata", "name");
    r.version = version_of(pod, true);
    r.address = fields::str_at(pod, "status", "podIP");
    r.node = fields::str_at(pod, "spec", "nodeName");
    r.created_at = created_of(pod);
    const auto phase = fields::str_at(pod, "status", "phase");
    const json* statuses = fields::at(pod, "status", "containerStatuses");
    std::string waiting, waiting_message, terminated;
    for (const auto& cs : statuses != nullptr && statuses->is_array() ? *statuses : json::array()) {
        if (text_of(cs, "name") != "main") {
            continue;
        }
        r.restarts = number_of(cs, "restartCount", 0);
        waiting = fields::str_at(cs, "state", "waiting", "reason");
        waiting_message = fields::str_at(cs, "state", "waiting", "message");
        if (const json* t = fields::at(cs, "lastState", "terminated"); t != nullptr && t->is_object()) {
            terminated = fmt::format("exited with code {}", t->value("exitCode", 0));
        }
    }
    if (fields::at(pod, "metadata", "deletionTimestamp") != nullptr) {
        r.state = "TERMINATING";
    } else if (pod_ready(pod)) {
        r.state = "READY";
    } else if (phase == "Failed" || phase == "Succeeded") {
        r.state = "FAILED";
        r.reason = fields::str_at(pod, "status", "message");
    } else if (phase == "Pending" && r.node.empty()) {
        r.state = "PENDING";
        const json* conditions = fields::at(pod, "status", "conditions");
        for (const auto& c : conditions != nullptr && conditions->is_array() ? *conditions : json::array()) {
            if (text_of(c, "type") == "PodScheduled" && text_of(c, "status") == "False") {
                r.reason = text_of(c, "message", text_of(c, "reason"));
            }
        }
    } else if (!waiting.empty() && waiting != "ContainerCreating" && waiting != "PodInitializing") {
        r.state = "FAILED";
        r.reason = waiting + (waiting_message.empty() ? "" : ": " + waiting_message);
        if (!terminated.empty()) {
            r.reason += " (last run " + terminated + ")";
        }
    } else if (auto it = probe_failures.find(r.pod); it != probe_failures.end()) {
        r.state = "NOT_READY";
        r.reason = it->second;
    } else {
        r.state = "STARTING";
    }
    return r;
}

std::string endpoint_of(const json& service) {
    const json* ports = fields::at(service, "spec", "ports");
    if (ports == nullptr || !ports->is_array() || ports->empty()) {
        return "";
    }
    const json& p = (*ports)[0];
    const int port = number_of(p, "port", 0);
    const auto type = fields::str_at(service, "spec", "type");
    if (type == "LoadBalancer") {
        const json* ingress = fields::at(service, "status", "loadBalancer", "ingress");
        if (ingress != nullptr && ingress->is_array() && !ingress->empty()) {
            const auto& first = (*ingress)[0];
            const std::string host = text_of(first, "ip", text_of(first, "hostname"));
            if (!host.empty()) {
                return fmt::format("{}:{}", host, port);
            }
        }
        return "<pending>";
    }
    if (type == "NodePort") {
        return fmt::format("NODE:{}", number_of(p, "nodePort", 0));
    }
    const auto ip = fields::str_at(service, "spec", "clusterIP");
    return ip.empty() || ip == "None" ? "" : fmt::format("{}:{}", ip, port);
}

// The Service's address as an annotation of the Deployment (not for a LoadBalancer: its address comes later).
void note_endpoint(json& deployment, const json& service) {
    const auto endpoint = endpoint_of(service);
    if (!endpoint.empty() && fields::str_at(service, "spec", "type") != "LoadBalancer") {
        deployment["metadata"]["annotations"][std::string(k_service_endpoint_annotation)] = endpoint;
    }
}

// Lists one kind's service objects of a namespace by service name (Deployments skimmed: serve status reads
// a few fields of them, and 20 whole Deployments are 200 KB of JSON).
Result<std::map<std::string, json>> by_service(KubeApi& api, const std::string& path, std::vector<int> pass = {},
                                               bool deployments = false) {
    // The Deployments from the API server's watch cache (resourceVersion=0, as informers list): a status view
    // may be milliseconds behind, and the server answers without a round trip to etcd.
    auto listed = deployments ? api.list_deployments_for_status(path + any_service_query() + "&resourceVersion=0")
                              : api.call("GET", path + any_service_query(), {}, std::move(pass));
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    std::map<std::string, json> out;
    if (auto* items = listed->body.is_object() ? &listed->body["items"] : nullptr; items && items->is_array()) {
        for (auto& item : *items) {
            auto name = fields::str_at(item, "metadata", "labels", k_service_label);
            out[std::move(name)] = std::move(item);
        }
    }
    return out;
}

} // namespace

Result<ServePlan> K8sBackend::serve_plan(const TaskSpec& spec, const Placement& placement, const std::string& name,
                                         int version) {
    auto pod = job_plan(spec, placement, version);
    if (!pod) {
        return tl::unexpected(pod.error());
    }
    ServePlan plan;
    plan.name = name;
    plan.version = version;
    plan.service_type = m_settings.serve_service_type;
    plan.qps_metric = m_settings.serve_qps_metric;
    plan.pod = std::move(*pod);
    plan.pod.base_name = name;
    auto f = features();
    if (!f) {
        return tl::unexpected(f.error());
    }
    plan.hpa_v2 = f->major > 1 || f->minor >= 23;
    if (spec.service && autoscales(*spec.service)) {
        // The custom metrics API lists the metrics it has values for ("pods/<name>"); a cluster without the
        // API answers 404 (or 503 when its APIService's backend is down).
        auto listed = m_api.call("GET", "/apis/custom.metrics.k8s.io/v1beta1", {}, {404, 503});
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        if (listed->status == 200) {
            const json* resources = fields::get(&listed->body, "resources");
            for (const auto& r : resources != nullptr && resources->is_array() ? *resources : json::array()) {
                if (text_of(r, "name") == "pods/" + plan.qps_metric) {
                    plan.metric_served = true;
                }
            }
        }
    }
    return plan;
}

Result<std::string> K8sBackend::render_service(const TaskSpec& spec, const Placement& placement) {
    const auto name = service_object_name(spec.name).value_or("service");
    auto plan = serve_plan(spec, placement, name, 1);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    auto manifests = render_serve_manifests(spec, *plan, true);
    if (!manifests) {
        return tl::unexpected(manifests.error());
    }
    std::string notes;
    for (const auto& n : manifests->notes) {
        notes += "# note: " + n + "\n";
    }
    return notes + to_yaml(*manifests);
}

Result<ServeOutcome> K8sBackend::serve_up(const TaskSpec& spec, const Placement& placement, const ServiceRef& ref) {
    auto plan = serve_plan(spec, placement, ref.name, 1);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    if (!ref.namespace_name.empty()) {
        plan->pod.namespace_name = ref.namespace_name;
    }
    auto m = render_serve_manifests(spec, *plan, false);
    if (!m) {
        return tl::unexpected(m.error());
    }
    const auto& ns = plan->pod.namespace_name;
    auto existing = m_api.call("GET", apps_path(ns) + "/" + ref.name, {}, {404});
    if (!existing) {
        return tl::unexpected(existing.error());
    }
    if (existing->status != 404) {
        return fail(ErrorKind::usage,
                    fmt::format("{}: a Deployment {} already exists in namespace {}", m_cluster, ref.name, ns),
                    fmt::format("choose another name (tandem serve up FILE -n NAME) or remove it"));
    }
    // In order; what was made is taken back when a later create fails.
    std::vector<std::string> made;
    auto take_back = [&] {
        for (auto it = made.rbegin(); it != made.rend(); ++it) {
            (void)m_api.call("DELETE", *it, json{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}}, {404});
        }
    };
    // The Service before the Deployment: its address goes into the Deployment's annotations.
    std::vector<std::pair<std::string, json*>> objects;
    if (m->secret) {
        objects.emplace_back(secrets_path(ns), &*m->secret);
    }
    objects.emplace_back(services_path(ns), &m->service);
    objects.emplace_back(apps_path(ns), &m->deployment);
    if (m->hpa) {
        objects.emplace_back(hpa_path(ns, plan->hpa_v2), &*m->hpa);
    }
    for (const auto& [path, object] : objects) {
        auto created = m_api.call("POST", path, *object, {}, false);
        if (!created) {
            take_back();
            return tl::unexpected(created.error());
        }
        made.push_back(path + "/" + (*object)["metadata"]["name"].get<std::string>());
        if (object == &m->service) {
            note_endpoint(m->deployment, created->body);
        }
    }
    return ServeOutcome{ns, m->notes};
}

Result<ServeOutcome> K8sBackend::serve_update(const TaskSpec& spec, const Placement& placement, const ServiceRef& ref,
                                              int version) {
    auto plan = serve_plan(spec, placement, ref.name, version);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    const std::string ns = ref.namespace_name.empty() ? plan->pod.namespace_name : ref.namespace_name;
    plan->pod.namespace_name = ns;
    auto m = render_serve_manifests(spec, *plan, false);
    if (!m) {
        return tl::unexpected(m.error());
    }
    // The Service: type and port (merge patch keeps its cluster IP).
    json service_patch = {{"metadata", {{"labels", m->service["metadata"]["labels"]}}},
                          {"spec", {{"type", m->service["spec"]["type"]}, {"ports", m->service["spec"]["ports"]}}}};
    auto patched = m_api.call("PATCH", services_path(ns) + "/" + ref.name, service_patch, {}, true,
                              "application/merge-patch+json");
    if (!patched) {
        return tl::unexpected(patched.error());
    }
    note_endpoint(m->deployment, patched->body);
    const std::string dep_path = apps_path(ns) + "/" + ref.name;
    // The Deployment: its pod template replaced (a rolling update), its replicas kept while an autoscaler
    // owns them. A write that lost a race with the autoscaler (409) is read and tried again.
    for (int attempt = 0;; ++attempt) {
        auto current = m_api.call("GET", dep_path, {}, {404});
        if (!current) {
            return tl::unexpected(current.error());
        }
        if (current->status == 404) {
            return fail(ErrorKind::not_found,
                        fmt::format("{}: the service's Deployment {} is gone from namespace {}", m_cluster, ref.name, ns),
                        fmt::format("tandem serve down {} forgets it; serve up makes it again", ref.name));
        }
        json next = m->deployment;
        next["metadata"]["resourceVersion"] = fields::str_at(current->body, "metadata", "resourceVersion");
        if (m->hpa) {
            const int replicas = int_at(current->body, "spec", "replicas");
            next["spec"]["replicas"] =
                std::clamp(replicas, spec.service->min_replicas, spec.service->max_replicas.value_or(replicas));
        }
        auto put = m_api.call("PUT", dep_path, next, {409});
        if (!put) {
            return tl::unexpected(put.error());
        }
        if (put->status != 409) {
            break;
        }
        if (attempt >= 4) {
            return fail(ErrorKind::remote, fmt::format("{}: the Deployment {} kept changing under the update", m_cluster, ref.name));
        }
    }
    // The Secret and the autoscaler: replaced, made, or removed to match the new spec.
    auto replace = [&](const std::string& collection, const std::string& name, const std::optional<json>& want) -> Status {
        auto current = m_api.call("GET", collection + "/" + name, {}, {404});
        if (!current) {
            return tl::unexpected(current.error());
        }
        Result<ApiAnswer> done = ApiAnswer{};
        if (!want && current->status != 404) {
            done = m_api.call("DELETE", collection + "/" + name, {}, {404});
        } else if (want && current->status == 404) {
            done = m_api.call("POST", collection, *want, {}, false);
        } else if (want) {
            json next = *want;
            next["metadata"]["resourceVersion"] = fields::str_at(current->body, "metadata", "resourceVersion");
            done = m_api.call("PUT", collection + "/" + name, next);
        }
        if (!done) {
            return tl::unexpected(done.error());
        }
        return {};
    };
    if (auto ok = replace(secrets_path(ns), ref.name + "-secrets", m->secret); !ok) {
        return tl::unexpected(ok.error());
    }
    if (auto ok = replace(hpa_path(ns, plan->hpa_v2), ref.name, m->hpa); !ok) {
        return tl::unexpected(ok.error());
    }
    return ServeOutcome{ns, m->notes};
}

Result<std::vector<ServiceView>> K8sBackend::serve_status(const std::vector<ServiceRef>& services, bool replicas) {
    std::vector<ServiceView> out(services.size());
    std::map<std::string, std::vector<std::size_t>> by_namespace;
    for (std::size_t i = 0; i < services.size(); ++i) {
        out[i].name = services[i].name;
        by_namespace[services[i].namespace_name.empty() ? m_settings.namespace_name : services[i].namespace_name]
            .push_back(i);
    }
    for (const auto& [ns, indexes] : by_namespace) {
        auto deployments = by_service(m_api, apps_path(ns), {}, true);
        if (!deployments) {
            return tl::unexpected(deployments.error());
        }
        // The Deployments say most: the Services are read only for an address not noted on its Deployment
        // (a LoadBalancer's), the autoscalers only for one service's detail (its current load).
        bool need_services = replicas;
        for (auto i : indexes) {
            auto d = deployments->find(out[i].name);
            need_services = need_services ||
                            (d != deployments->end() &&
                             fields::str_at(d->second, "metadata", "annotations", k_service_endpoint_annotation).empty());
        }
        std::map<std::string, json> svcs, hpas;
        if (need_services) {
            auto listed = by_service(m_api, services_path(ns));
            if (!listed) {
                return tl::unexpected(listed.error());
            }
            svcs = std::move(*listed);
        }
        if (replicas) {
            auto f = features();
            if (!f) {
                return tl::unexpected(f.error());
            }
            auto listed = by_service(m_api, hpa_path(ns, f->major > 1 || f->minor >= 23), {404});
            if (!listed) {
                return tl::unexpected(listed.error());
            }
            hpas = std::move(*listed);
        }
        bool need_pods = replicas;
        for (auto i : indexes) {
            auto& v = out[i];
            auto d = deployments->find(v.name);
            if (d == deployments->end()) {
                v.status = "GONE";
                v.reason = "its Deployment is not on the cluster";
                continue;
            }
            v.exists = true;
            v.version = version_of(d->second, false);
            v.desired = int_at(d->second, "spec", "replicas");
            v.ready = int_at(d->second, "status", "readyReplicas");
            v.updated = int_at(d->second, "status", "updatedReplicas");
            v.created_at = created_of(d->second);
            const int total = int_at(d->second, "status", "replicas");
            v.endpoint = fields::str_at(d->second, "metadata", "annotations", k_service_endpoint_annotation);
            if (auto s = svcs.find(v.name); s != svcs.end()) {
                v.endpoint = endpoint_of(s->second);
            }
            const auto range = fields::str_at(d->second, "metadata", "annotations", k_service_autoscale_annotation);
            if (const auto dash = range.find('-'); dash != std::string::npos) {
                try {
                    v.min_replicas = std::stoi(range.substr(0, dash));
                    v.max_replicas = std::stoi(range.substr(dash + 1));
                } catch (const std::exception&) {
                }
            }
            if (auto h = hpas.find(v.name); h != hpas.end()) {
                v.min_replicas = int_at(h->second, "spec", "minReplicas") > 0 ? int_at(h->second, "spec", "minReplicas") : 1;
                v.max_replicas = int_at(h->second, "spec", "maxReplicas");
                const json* metrics = fields::at(h->second, "status", "currentMetrics");
                for (const auto& cm : metrics != nullptr && metrics->is_array() ? *metrics : json::array()) {
                    const auto q = fields::str_at(cm, "pods", "current", "averageValue");
                    if (!q.empty()) {
                        try {
                            v.current_qps = q.back() == 'm' ? std::stod(q.substr(0, q.size() - 1)) / 1000 : std::stod(q);
                        } catch (const std::exception&) {
                        }
                    }
                }
            }
            // The controller has not seen the latest spec yet (an update just written): its counts are old.
            const json* generation = fields::at(d->second, "metadata", "generation");
            const json* observed = fields::at(d->second, "status", "observedGeneration");
            const bool stale = generation != nullptr && generation->is_number_integer() &&
                               (observed == nullptr || !observed->is_number_integer() ||
                                observed->get<std::int64_t>() < generation->get<std::int64_t>());
            if (v.desired == 0) {
                v.status = "NO_REPLICAS";
            } else if ((stale && v.version > 1) || (v.version > 1 && v.updated < v.desired) || total > v.updated) {
                v.status = "UPDATING"; // replicas of an older version are still there
                need_pods = need_pods || v.updated < v.desired;
            } else if (!stale && v.ready >= v.desired && v.updated >= v.desired) {
                v.status = "READY";
            } else {
                v.status = "STARTING";
                need_pods = true;
            }
        }
        if (!need_pods) {
            continue;
        }
        auto pods = m_api.call("GET", pods_path(ns) + any_service_query());
        if (!pods) {
            return tl::unexpected(pods.error());
        }
        // The newest probe failure of each pod (the kubelet's Unhealthy events).
        std::map<std::string, std::string> failures;
        std::map<std::string, std::int64_t> failure_at;
        auto events = m_api.call("GET", fmt::format("/api/v1/namespaces/{}/events?fieldSelector={}", ns,
                                                    query_escape("involvedObject.kind=Pod,reason=Unhealthy")));
        if (!events) {
            return tl::unexpected(events.error());
        }
        for (const auto& e : fields::items(events->body)) {
            const auto pod = fields::str_at(e, "involvedObject", "name");
            auto at = parse_rfc3339(fields::str_at(e, "lastTimestamp")).value_or(0);
            auto message = fields::str_at(e, "message");
            if (message.rfind("Liveness", 0) == 0 && failures.count(pod) != 0) {
                continue;
            }
            if (failure_at.count(pod) == 0 || failure_at[pod] <= at) {
                failure_at[pod] = at;
                std::replace(message.begin(), message.end(), '\n', ' ');
                failures[pod] = message.substr(0, 300);
            }
        }
        std::map<std::string, std::vector<ReplicaView>> by_name;
        for (const auto& pod : fields::items(pods->body)) {
            by_name[fields::str_at(pod, "metadata", "labels", k_service_label)].push_back(replica_of(pod, failures));
        }
        for (auto i : indexes) {
            auto& v = out[i];
            auto& list = by_name[v.name];
            std::sort(list.begin(), list.end(), [](const ReplicaView& a, const ReplicaView& b) {
                return a.created_at != b.created_at ? a.created_at < b.created_at : a.pod < b.pod;
            });
            std::set<int> old;
            for (const auto& r : list) {
                if (r.version != v.version && r.state != "TERMINATING") {
                    old.insert(r.version);
                }
            }
            v.old_versions.assign(old.begin(), old.end());
            if (v.status == "STARTING" || v.status == "UPDATING") {
                for (const auto& r : list) {
                    if ((r.state == "FAILED" || r.state == "NOT_READY" || r.state == "PENDING") && !r.reason.empty()) {
                        if (v.status == "STARTING" && r.state != "PENDING") {
                            v.status = "NOT_READY";
                        }
                        v.reason = fmt::format("{}: {}", r.pod, r.reason);
                        break;
                    }
                }
            }
            if (replicas) {
                v.replicas = std::move(list);
            }
        }
    }
    return out;
}

Result<bool> K8sBackend::serve_down(const ServiceRef& ref) {
    const std::string ns = ref.namespace_name.empty() ? m_settings.namespace_name : ref.namespace_name;
    auto f = features();
    if (!f) {
        return tl::unexpected(f.error());
    }
    const json background = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
    bool found = false;
    for (const auto& path : {hpa_path(ns, f->major > 1 || f->minor >= 23) + "/" + ref.name,
                             apps_path(ns) + "/" + ref.name, services_path(ns) + "/" + ref.name,
                             secrets_path(ns) + "/" + ref.name + "-secrets"}) {
        auto gone = m_api.call("DELETE", path, background, {404});
        if (!gone) {
            return tl::unexpected(gone.error());
        }
        found = found || gone->status != 404;
    }
    // Its pods go with the Deployment's ReplicaSets (the garbage collector): wait for them, so that what
    // `serve down` leaves is nothing.
    const auto selector = "?labelSelector=" + query_escape(service_selector(ref.name));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
        auto pods = m_api.call("GET", pods_path(ns) + selector);
        if (!pods) {
            return tl::unexpected(pods.error());
        }
        auto rs = m_api.call("GET", fmt::format("/apis/apps/v1/namespaces/{}/replicasets{}", ns, selector));
        if (!rs) {
            return tl::unexpected(rs.error());
        }
        if (fields::items(pods->body).empty() && fields::items(rs->body).empty()) {
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            return fail(ErrorKind::timeout, fmt::format("{}: the pods of service {} were still there after 120 s",
                                                        m_cluster, ref.name));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return found;
}

} // namespace tandem::k8s
