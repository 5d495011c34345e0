#pragma once
// Builds JobViews from the recorded status fixtures (tests/fixtures/k8s/status_*.json) and variations
// of their objects. Owns the JSON the views point into.

#include <deque>
#include <string>
#include <vector>

#include "backends/k8s/job_state.hpp"
#include "k8s_fixtures.hpp"

struct ViewBuilder {
    std::deque<nlohmann::json> storage; // stable addresses
    tandem::k8s::JobView view;

    ViewBuilder& job(nlohmann::json j) {
        view.jobs.push_back(&storage.emplace_back(std::move(j)));
        return *this;
    }
    ViewBuilder& pod(nlohmann::json p) {
        view.pods.push_back(&storage.emplace_back(std::move(p)));
        return *this;
    }
    ViewBuilder& event(nlohmann::json e) {
        view.events.push_back(&storage.emplace_back(std::move(e)));
        return *this;
    }
    ViewBuilder& ranks(int n) {
        view.expected_ranks = n;
        return *this;
    }
    tandem::JobUpdate update() const { return tandem::k8s::to_job_update(view); }
};

inline const nlohmann::json& status_jobs() {
    static const nlohmann::json j = k8s_fixture("status_jobs.json");
    return j;
}
inline const nlohmann::json& status_pods() {
    static const nlohmann::json j = k8s_fixture("status_pods.json");
    return j;
}
inline const nlohmann::json& status_events() {
    static const nlohmann::json j = k8s_fixture("status_events.json");
    return j;
}
inline nlohmann::json fixture_job(const std::string& name) {
    return k8s_item(status_jobs(), name);
}
inline nlohmann::json fixture_pod(const std::string& name) {
    return k8s_item(status_pods(), name);
}

// A container state as the kubelet reports it, for status.containerStatuses[0].
inline nlohmann::json waiting(const std::string& reason, const std::string& message) {
    return {{"waiting", {{"reason", reason}, {"message", message}}}};
}
inline nlohmann::json terminated(int code, const std::string& reason, const std::string& started,
                                 const std::string& finished) {
    return {{"terminated",
             {{"exitCode", code}, {"reason", reason}, {"startedAt", started}, {"finishedAt", finished}}}};
}

// The running fixture pod turned into a pending, scheduled one whose container waits with `reason`.
inline nlohmann::json pod_waiting(const std::string& reason, const std::string& message) {
    auto p = fixture_pod("tandem-3-serve-7hd2c");
    p["status"]["phase"] = "Pending";
    p["status"]["conditions"] = nlohmann::json::array(
        {{{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-12-02T12:00:00Z"}}});
    p["status"]["containerStatuses"][0]["state"] = waiting(reason, message);
    p["status"]["containerStatuses"][0]["ready"] = false;
    p["status"]["containerStatuses"][0]["started"] = false;
    return p;
}
