// Pod phases, container states and waiting reasons -> one rank's state. The v1.20 shapes read here:
//   status.phase                       Pending | Running | Succeeded | Failed | Unknown
//   status.conditions[PodScheduled]    False / Unschedulable with the scheduler's message
//   status.containerStatuses[].state   waiting{reason,message} | running{startedAt} |
//                                      terminated{exitCode,reason,startedAt,finishedAt}; lastState likewise
//   status.reason / message            Evicted, DeadlineExceeded, NodeLost, Shutdown... on a Failed pod
// Waiting reasons that keep a pod from ever starting without someone acting (a bad image, a missing
// Secret) are shown as they are; Kubernetes keeps retrying them, so the job stays PENDING.

#include "backends/k8s/job_state_pods.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/json_fields.hpp"

namespace tandem::k8s::detail {

namespace {

using nlohmann::json;

constexpr std::size_t k_message_limit = 300;

// Waiting reasons worth showing as the job's reason: the pod will not start on its own.
constexpr std::array<std::string_view, 8> k_stuck_reasons{
    "ImagePullBackOff",           "ErrImagePull",         "ErrImageNeverPull", "InvalidImageName",
    "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError"};

bool stuck(std::string_view reason) {
    return std::find(k_stuck_reasons.begin(), k_stuck_reasons.end(), reason) != k_stuck_reasons.end();
}

std::vector<const json*> container_statuses(const json& pod) {
    std::vector<const json*> out;
    for (const char* key : {"initContainerStatuses", "containerStatuses"}) {
        if (const json* list = fields::at(pod, "status", key); list != nullptr && list->is_array()) {
            for (const auto& c : *list) {
                out.push_back(&c);
            }
        }
    }
    return out;
}

void widen_times(PodObservation& o, const json& cs) {
    for (const char* which : {"state", "lastState"}) {
        for (const char* kind : {"running", "terminated"}) {
            if (auto t = time_at(fields::at(cs, which, kind, "startedAt"))) {
                o.started_at = o.started_at ? std::min(*o.started_at, *t) : *t;
            }
        }
        if (auto t = time_at(fields::at(cs, which, "terminated", "finishedAt"))) {
            o.finished_at = o.finished_at ? std::max(*o.finished_at, *t) : *t;
        }
    }
}

std::string waiting_text(const json& waiting) {
    const auto reason = fields::str_at(waiting, "reason");
    const auto message = one_line(fields::str_at(waiting, "message"));
    return message.empty() ? reason : reason + ": " + message;
}

// A pod that has not run: unscheduled, or scheduled and creating its containers, or stuck.
void observe_pending(PodObservation& o, const json& pod, const std::vector<const json*>& events) {
    for (const json* cs : container_statuses(pod)) {
        const json* waiting = fields::at(*cs, "state", "waiting");
        if (waiting != nullptr && stuck(fields::str_at(*waiting, "reason"))) {
            o.state = JobState::pending;
            o.reason = waiting_text(*waiting);
            return;
        }
    }
    if (const json* conds = fields::at(pod, "status", "conditions"); conds != nullptr && conds->is_array()) {
        for (const auto& c : *conds) {
            if (fields::str_at(c, "type") == "PodScheduled" && fields::str_at(c, "status") == "False") {
                const auto message = one_line(fields::str_at(c, "message"));
                const auto reason = fields::str_at(c, "reason");
                o.state = JobState::pending;
                o.reason = !message.empty() ? message : !reason.empty() ? reason : "not scheduled yet";
                return;
            }
        }
    }
    const auto node = fields::str_at(pod, "spec", "nodeName");
    if (node.empty()) {
        const auto name = fields::str_at(pod, "metadata", "name");
        const auto message = latest_event_message(events, "Pod", name, "FailedScheduling");
        o.state = JobState::pending;
        o.reason = message.empty() ? "waiting for the scheduler" : message;
        return;
    }
    o.state = JobState::starting;
    for (const json* cs : container_statuses(pod)) {
        if (const json* waiting = fields::at(*cs, "state", "waiting"); waiting != nullptr) {
            o.reason = waiting_text(*waiting);
            return;
        }
    }
    o.reason = "starting on " + node;
}

} // namespace

std::string one_line(std::string text) {
    std::replace_if(
        text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
    const auto first = text.find_first_not_of(' ');
    const auto last = text.find_last_not_of(' ');
    text = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
    if (text.size() > k_message_limit) {
        text = text.substr(0, k_message_limit) + "...";
    }
    return text;
}

std::optional<std::int64_t> time_at(const json* field) {
    return field != nullptr && field->is_string() ? parse_rfc3339(field->get<std::string>()) : std::nullopt;
}

std::string latest_event_message(const std::vector<const json*>& events, std::string_view kind,
                                 std::string_view name, std::string_view reason) {
    const json* best = nullptr;
    std::int64_t best_time = 0;
    for (const json* e : events) {
        if (fields::str_at(*e, "reason") != reason || fields::str_at(*e, "involvedObject", "name") != name ||
            (!kind.empty() && fields::str_at(*e, "involvedObject", "kind") != kind)) {
            continue;
        }
        // lastTimestamp (core/v1 events), else eventTime (events.k8s.io-style), else creation.
        auto t = time_at(fields::at(*e, "lastTimestamp"));
        t = t ? t : time_at(fields::at(*e, "eventTime"));
        t = t ? t : time_at(fields::at(*e, "metadata", "creationTimestamp"));
        if (best == nullptr || t.value_or(0) >= best_time) {
            best = e;
            best_time = t.value_or(0);
        }
    }
    return best == nullptr ? std::string() : one_line(fields::str_at(*best, "message"));
}

std::optional<std::string> disruption(const json& pod) {
    if (const json* conds = fields::at(pod, "status", "conditions"); conds != nullptr && conds->is_array()) {
        for (const auto& c : *conds) {
            if (fields::str_at(c, "type") == "DisruptionTarget" && fields::str_at(c, "status") == "True") {
                return one_line(fields::str_at(c, "reason"));
            }
        }
    }
    if (fields::str_at(pod, "status", "reason") == "Evicted") {
        return std::string("Evicted");
    }
    return std::nullopt;
}

PodObservation describe_failure(const json& pod) {
    PodObservation o;
    o.state = JobState::failed;
    for (const json* cs : container_statuses(pod)) {
        widen_times(o, *cs);
    }
    // The first container that ended badly explains the pod; OOMKilled wins over a plain exit code
    // because the code (137) alone does not say why.
    const json* culprit = nullptr;
    for (const json* cs : container_statuses(pod)) {
        for (const char* which : {"state", "lastState"}) {
            const json* term = fields::at(*cs, which, "terminated");
            const json* code = fields::get(term, "exitCode");
            if (code == nullptr || !code->is_number_integer() || code->get<int>() == 0) {
                continue;
            }
            if (culprit == nullptr || (fields::str_at(*term, "reason") == "OOMKilled" &&
                                       fields::str_at(*culprit, "reason") != "OOMKilled")) {
                culprit = term;
            }
        }
    }
    if (culprit != nullptr) {
        o.exit_code = fields::get(culprit, "exitCode")->get<int>();
        o.reason = fields::str_at(*culprit, "reason") == "OOMKilled"
                       ? std::string("OOMKilled")
                       : fmt::format("exit code {}", *o.exit_code);
        return o;
    }
    const auto reason = fields::str_at(pod, "status", "reason");
    const auto message = one_line(fields::str_at(pod, "status", "message"));
    if (!reason.empty()) {
        o.reason = message.empty() ? reason : reason + ": " + message;
    } else {
        o.reason = message.empty() ? "pod failed (Kubernetes gave no reason)" : message;
    }
    return o;
}

PodObservation observe_pod(const json& pod, const std::vector<const json*>& events) {
    const auto phase = fields::str_at(pod, "status", "phase");
    if (phase == "Failed") {
        return describe_failure(pod);
    }
    PodObservation o;
    for (const json* cs : container_statuses(pod)) {
        widen_times(o, *cs);
    }
    if (phase == "Succeeded") {
        o.state = JobState::succeeded;
        o.exit_code = 0;
        o.reason = "exit code 0";
    } else if (phase == "Running") {
        o.state = JobState::running;
        for (const json* cs : container_statuses(pod)) {
            const json* waiting = fields::at(*cs, "state", "waiting");
            if (waiting == nullptr) {
                continue;
            }
            o.reason = waiting_text(*waiting);
            const json* code = fields::at(*cs, "lastState", "terminated", "exitCode");
            if (code != nullptr && code->is_number_integer()) {
                o.reason += fmt::format(" (last exit code {})", code->get<int>());
            }
            break;
        }
    } else if (phase == "Unknown") {
        o.state = JobState::unknown;
        o.reason = fmt::format("pod state Unknown: node {} is not reporting",
                               fields::str_at(pod, "spec", "nodeName"));
    } else {
        observe_pending(o, pod, events);
    }
    return o;
}

} // namespace tandem::k8s::detail
