#pragma once
// What one pod says about its rank (internal to job_state.cpp; split out to keep each file to one
// concern). Pure functions over core/v1 Pod objects.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job_state.hpp"

namespace tandem::k8s::detail {

struct PodObservation {
    JobState state = JobState::pending;
    std::string reason;
    std::optional<int> exit_code;
    std::optional<std::int64_t> started_at;  // earliest container start
    std::optional<std::int64_t> finished_at; // latest container end
};

// `events`: the group's events; a FailedScheduling event for this pod explains a Pending pod whose
// PodScheduled condition is missing.
PodObservation observe_pod(const nlohmann::json& pod, const std::vector<const nlohmann::json*>& events);

// Whether the cluster disrupted the pod (evicted through the Eviction API, preempted, its node lost: the
// DisruptionTarget condition of 1.26+; or evicted by the kubelet for node pressure, reason Evicted), and
// how it says so ("EvictionByEvictionAPI", "Evicted"); nullopt when not.
std::optional<std::string> disruption(const nlohmann::json& pod);

// Why a pod failed: "OOMKilled" (exit 137), "exit code N", "Evicted: <message>", ... with its exit code.
PodObservation describe_failure(const nlohmann::json& pod);

// A message as one line without surrounding blanks, cut to a readable length.
std::string one_line(std::string text);

// The message of the latest event with this reason about object `name` (any kind when kind is empty).
std::string latest_event_message(const std::vector<const nlohmann::json*>& events, std::string_view kind,
                                 std::string_view name, std::string_view reason);

// Unix seconds of an RFC 3339 field, or nullopt.
std::optional<std::int64_t> time_at(const nlohmann::json* field);

} // namespace tandem::k8s::detail
