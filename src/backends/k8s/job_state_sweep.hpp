#pragma once
// A sweep's Indexed Job -> its elements and the sweep's state (internal to job_state.cpp; split out to
// keep each file to one concern). Pure.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backends/k8s/job_state_pods.hpp"
#include "core/job.hpp"
#include "core/sweep.hpp"

namespace tandem::k8s::detail {

// What the Job and the newest pod of each completion index say.
struct SweepObservation {
    // Per index: its newest pod's observation and whether that pod is being deleted; nullopt: no pod.
    struct Index {
        PodObservation pod;
        bool deleting = false;
        bool disrupted = false; // evicted, preempted, its node lost: the Job controller replaces it
    };
    std::vector<std::optional<Index>> indexes;
    bool job_failed = false;   // the Job's Failed condition
    std::string failed_reason; // the condition's reason when it is not a pod's ("DeadlineExceeded")
    bool job_complete = false; // the Job's Complete condition
    bool suspended = false;
    std::vector<bool> failed_index; // status.failedIndexes (backoffLimitPerIndex, 1.29+)
};

// Each element's state: a succeeded pod S0; a failed pod F with its exit code once the index has failed
// for good (the Job failed, or failedIndexes names it), else P (the controller replaces it); a pod
// stopped as the Job gave up, and an index without a pod once the Job failed, C; otherwise the pod's
// state, P without one. The sweep: sweep_update's counts; FAILED or SUCCEEDED only with the Job's
// condition (until then RUNNING, "completing"); PENDING while suspended.
JobUpdate sweep_job_update(const Sweep& sweep, const SweepObservation& seen);

} // namespace tandem::k8s::detail
