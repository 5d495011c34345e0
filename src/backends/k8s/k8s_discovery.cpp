// Discovery on Kubernetes (issue 31): one list of the namespace's tandem Jobs, by label selector. A Job's
// identity is its tandem.dev/identity annotation; whose it is, Kubernetes does not record (no creator on
// an object), so the namespace the caller can read is the cluster's word and the tandem.dev/user label
// names the launching user. The state is what the Jobs alone say; `status` then refreshes the adopted
// jobs with their pods, as it does every job it tracks.

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/labels.hpp"
#include "backends/k8s/manifests.hpp"

namespace tandem::k8s {

using nlohmann::json;

Result<Discovered> K8sBackend::discover(bool all_users) {
    Discovered out;
    out.me = user();
    const std::string me = label_value(out.me);
    const std::string ns = m_settings.namespace_name;
    std::string selector = managed_selector() + "," + std::string(k_token_label);
    if (!all_users) {
        selector += fmt::format(",{}={}", k_user_label, me);
    }
    // Slim, as the state lists are (protobuf first; job_state_skim.hpp keeps the identity and user).
    auto answer = m_api.list_for_status(jobs_path(ns) + "?labelSelector=" + query_escape(selector));
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    out.history = m_settings.ttl_seconds_after_finished
                      ? fmt::format("Kubernetes deletes a finished Job after ttl_seconds_after_finished ({} s)",
                                    *m_settings.ttl_seconds_after_finished)
                      : std::string();
    const json& list = answer->body;
    const auto groups = group_by_tandem_job(list, json{{"items", json::array()}}, nullptr);
    std::set<std::string> seen;
    for (const auto& job : fields::items(list)) {
        const std::string base = fields::str_at(job, "metadata", "labels", k_job_label);
        if (base.empty() || !seen.insert(base).second) {
            continue; // one tandem job may be one Job per rank
        }
        auto id = decode_identity(fields::str_at(job, "metadata", "annotations", k_identity_annotation));
        if (!id) {
            ++out.unreadable; // an identity that does not decode: someone else's text
            continue;
        }
        if (!*id) {
            continue; // made by a tandem before identities
        }
        FoundJob f;
        f.remote_id = fmt::format("{}/{}", fields::str_at(job, "metadata", "namespace").empty()
                                               ? ns
                                               : fields::str_at(job, "metadata", "namespace"),
                                  base);
        f.owner = fields::str_at(job, "metadata", "labels", k_user_label);
        f.callers = f.owner == me;
        f.identity = std::move(**id);
        if (auto it = groups.find(base); it != groups.end()) {
            f.num_nodes = std::clamp(it->second.expected_ranks, 1, 100'000);
            f.update = to_job_update(it->second);
        }
        f.submitted_at = parse_rfc3339(fields::str_at(job, "metadata", "creationTimestamp")).value_or(0);
        out.jobs.push_back(std::move(f));
    }
    return out;
}

} // namespace tandem::k8s
