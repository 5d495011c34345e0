// Job groups on Kubernetes (core/job_group.hpp): the members' addresses are their pods' IPs by rank, and
// the address book reaches a member as a ConfigMap its pods mount (manifests.cpp), created once.

#include <fmt/format.h>

#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/labels.hpp"
#include "core/job_group.hpp"

namespace tandem::k8s {

using nlohmann::json;

// Pod IPs by rank, once every rank has a running pod with one.
Result<std::optional<std::vector<std::string>>> K8sBackend::hosts(const JobRecord& job) {
    const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
    auto pods = rank_pods(ns, base);
    if (!pods) {
        return tl::unexpected(pods.error());
    }
    std::vector<std::string> out;
    for (int rank = 0; rank < job.num_nodes; ++rank) {
        auto it = pods->find(rank);
        if (it == pods->end()) {
            return std::optional<std::vector<std::string>>();
        }
        const json status = it->second.value("status", json::object());
        const std::string ip = status.value("podIP", "");
        if (status.value("phase", "") != "Running" || ip.empty()) {
            return std::optional<std::vector<std::string>>();
        }
        if (!valid_address(ip)) {
            return fail(ErrorKind::remote, fmt::format("{}: pod of job {} has an address that is not one",
                                                       m_cluster, job.remote_id));
        }
        out.push_back(ip);
    }
    return std::optional<std::vector<std::string>>(std::move(out));
}

// Created complete, owned by the member's first Job, so it goes when the Job goes. A second publish finds it
// there (409): the same book is left as it is (a Role that grants create only is enough for a group
// whose members never move); a new one (a member recovered elsewhere) replaces its data with a merge
// patch, which the kubelet projects into the pods' files.
Status K8sBackend::publish(const JobRecord& job, const std::string& channel, const std::string& book) {
    const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
    json object = group_book_configmap(base, channel, book);
    auto jobs = m_api.call("GET", jobs_path(ns) + "?labelSelector=" + query_escape(job_selector(base)));
    if (!jobs) {
        return tl::unexpected(jobs.error());
    }
    const json items = jobs->body.value("items", json::array());
    if (!items.empty() && items.front().is_object()) {
        const json meta = items.front().value("metadata", json::object());
        object["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "batch/v1"},
                                                              {"kind", "Job"},
                                                              {"name", meta.value("name", "")},
                                                              {"uid", meta.value("uid", "")}}});
    }
    auto answer = m_api.call("POST", core_path(ns, "configmaps"), object, {409});
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    if (answer->status != 409) {
        return {};
    }
    const std::string path = core_path(ns, "configmaps") + "/" + object["metadata"].value("name", "");
    auto current = m_api.call("GET", path);
    if (!current) {
        return tl::unexpected(current.error());
    }
    if (fields::str_at(current->body, "data", k_group_book_key) == book) {
        return {};
    }
    auto patched = m_api.call("PATCH", path, json{{"data", {{std::string(k_group_book_key), book}}}},
                              {}, true, "application/merge-patch+json");
    if (!patched) {
        return tl::unexpected(patched.error());
    }
    return {};
}

} // namespace tandem::k8s
