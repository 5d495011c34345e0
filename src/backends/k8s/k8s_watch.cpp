// `status -w` for Kubernetes jobs: one watch on the tandem pods of the namespace (the pods change first
// and most: scheduled, running, terminated, deleted), the Job list read again after each change (Job
// conditions decide the end). The watch asks the server to end it every few seconds and resumes from the
// last resourceVersion, so a Job condition that lands after its pod's last event is still seen; a 410
// Gone (the resourceVersion is too old) lists the pods again.

#include <fmt/format.h>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/watch_events.hpp"
#include "backends/polling.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

constexpr int k_watch_window_seconds = 3;

} // namespace

Status K8sBackend::watch(const std::vector<JobRecord>& jobs, const WatchSink& sink) {
    if (jobs.empty()) {
        sink({});
        return {};
    }
    const std::string ns = split_remote_id(jobs.front().remote_id, m_settings.namespace_name).first;
    for (const auto& j : jobs) {
        if (split_remote_id(j.remote_id, m_settings.namespace_name).first != ns) {
            return backends::poll_jobs(*this, jobs, sink); // several namespaces: poll them
        }
    }
    const std::string selector = "labelSelector=" + query_escape(managed_selector());
    const std::string pods_path = fmt::format("/api/v1/namespaces/{}/pods", ns);
    const std::string jobs_path = fmt::format("/apis/batch/v1/namespaces/{}/jobs?{}", ns, selector);

    json pods;
    json job_list;
    auto emit = [&]() -> Result<bool> {
        auto listed = m_api.call("GET", jobs_path);
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        job_list = std::move(listed->body);
        auto groups = group_by_tandem_job(job_list, pods, nullptr);
        std::vector<JobUpdate> updates;
        for (const auto& job : jobs) {
            JobView view;
            const auto base = split_remote_id(job.remote_id, ns).second;
            if (auto it = groups.find(base); it != groups.end()) {
                view = it->second;
            }
            add_record(view, job);
            updates.push_back(to_job_update(view));
        }
        return sink(updates);
    };
    auto list_pods = [&]() -> Status {
        auto listed = m_api.call("GET", pods_path + "?" + selector);
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        pods = std::move(listed->body);
        return {};
    };

    if (auto ok = list_pods(); !ok) {
        return ok;
    }
    for (;;) {
        auto go_on = emit();
        if (!go_on) {
            return tl::unexpected(go_on.error());
        }
        if (!*go_on) {
            return {};
        }
        // Watch until something changes, the window ends, or the server says the version is gone.
        bool changed = false;
        bool gone = false;
        Error bad_line;
        bool failed = false;
        std::string partial;
        const std::string rv = pods["metadata"].value("resourceVersion", "");
        const std::string path =
            fmt::format("{}?{}&watch=true&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}",
                        pods_path, selector, k_watch_window_seconds, query_escape(rv));
        int status = 0;
        auto streamed = m_api.stream(
            path,
            [&](std::string_view piece) {
                partial.append(piece);
                for (auto nl = partial.find('\n'); nl != std::string::npos; nl = partial.find('\n')) {
                    const std::string line = partial.substr(0, nl);
                    partial.erase(0, nl + 1);
                    if (line.find_first_not_of(" \r\t") == std::string::npos) {
                        continue;
                    }
                    auto event = parse_watch_line(line);
                    if (!event) {
                        bad_line = event.error();
                        failed = true;
                        return false;
                    }
                    if (event->gone) {
                        gone = true;
                        return false;
                    }
                    apply_watch_event(pods, *event);
                    if (event->type != "BOOKMARK") {
                        changed = true;
                    }
                }
                // Stop at a change: the caller reports it, then watches again from the new version.
                return !changed;
            },
            {410}, &status);
        if (!streamed) {
            return streamed;
        }
        if (failed) {
            bad_line.message = fmt::format("{}: {}", m_cluster, bad_line.message);
            return tl::unexpected(bad_line);
        }
        if (gone || status == 410) {
            if (auto ok = list_pods(); !ok) {
                return ok;
            }
        }
    }
}

} // namespace tandem::k8s
