// Finding and removing a job's objects on Kubernetes: the job a lost submit left (by its submit token's
// label) and every object of a job on cancel (listed, then deleted by name).

#include <array>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/labels.hpp"

namespace tandem::k8s {

using nlohmann::json;

Result<std::optional<std::string>> K8sBackend::find_submitted(const JobRecord& job) {
    if (job.submit_token.empty()) {
        return std::nullopt;
    }
    const json spec = json::parse(job.spec_json, nullptr, false);
    const std::string wanted_ns = fields::str_at(spec, "config", "kubernetes", "namespace");
    const std::string ns = wanted_ns.empty() ? m_settings.namespace_name : wanted_ns;
    const std::string selector =
        "?labelSelector=" + query_escape(fmt::format("{}={}", k_token_label, job.submit_token));
    std::array<std::size_t, 3> counts{}; // Jobs, Services, Secrets carrying the token
    std::string base;
    const std::array<std::string, 3> collections{jobs_path(ns), core_path(ns, "services"),
                                                 core_path(ns, "secrets")};
    for (std::size_t k = 0; k < collections.size(); ++k) {
        auto listed = m_api.call("GET", collections[k] + selector);
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        for (const auto& item : fields::items(listed->body)) {
            ++counts[k];
            if (base.empty()) {
                base = fields::str_at(item, "metadata", "labels", k_job_label);
            }
        }
        if (k == 0 && counts[0] == 0) {
            return std::nullopt; // no Job: nothing of it was created (the Jobs come first)
        }
    }
    auto f = features();
    if (!f) {
        return tl::unexpected(f.error());
    }
    const std::size_t jobs_wanted = job.num_nodes > 1 && !f->indexed_jobs() ? job.num_nodes : 1;
    const json* secrets = fields::at(spec, "secrets");
    const bool secret_wanted = secrets != nullptr && secrets->is_array() && !secrets->empty();
    const bool complete = !base.empty() && counts[0] >= jobs_wanted &&
                          (job.num_nodes <= 1 || counts[1] > 0) && (!secret_wanted || counts[2] > 0);
    if (!complete) {
        // A submit cut off half-way (some Jobs, no Service or Secret yet) cannot run as asked: take it back.
        JobRecord partial = job;
        partial.remote_id = ns + "/" + (base.empty() ? job.submit_token : base);
        if (!base.empty()) {
            if (auto gone = cancel(partial); !gone) {
                return tl::unexpected(gone.error());
            }
        }
        return std::nullopt;
    }
    return ns + "/" + base;
}

// Every object of the job, listed and then deleted by name: a user's Role usually grants get, list,
// watch, create and delete, not deletecollection, so a DELETE on a collection would be refused (and
// Services have no delete-collection before 1.23 anyway). A 404 means someone else got there first.
Status K8sBackend::cancel(const JobRecord& job) {
    const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
    {
        std::error_code ec;
        std::filesystem::create_directories(m_cancelled_dir, ec);
        std::ofstream(m_cancelled_dir + "/" + safe_file_part(job.remote_id)) << base << "\n";
    }
    const std::string selector = "?labelSelector=" + query_escape(job_selector(base));
    // Background: the Job goes now and the garbage collector deletes its pods (batch/v1's default would
    // orphan them, and they would keep running).
    const json background = {
        {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
    const std::array<std::pair<std::string, json>, 4> kinds{{
        {jobs_path(ns), background}, // Jobs first: nothing of the job runs on after this
        {core_path(ns, "services"), json()},
        {core_path(ns, "secrets"), json()},
        {core_path(ns, "configmaps"), json()}, // a job group member's address book
    }};
    for (const auto& [collection, options] : kinds) {
        auto listed = m_api.call("GET", collection + selector);
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        for (const auto& item : listed->body.value("items", json::array())) {
            const std::string name = item.value("metadata", json::object()).value("name", "");
            if (name.empty()) {
                continue;
            }
            auto gone = m_api.call("DELETE", collection + "/" + query_escape(name), options, {404});
            if (!gone) {
                return tl::unexpected(gone.error());
            }
        }
    }
    return {};
}

} // namespace tandem::k8s
