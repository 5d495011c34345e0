// A sweep's elements from its Indexed Job (see job_state_sweep.hpp).

#include "backends/k8s/job_state_sweep.hpp"

#include <fmt/format.h>

namespace tandem::k8s::detail {

namespace {

ElementState element_of(const SweepObservation& seen, std::size_t i, std::string& pending_reason) {
    const auto& index = seen.indexes[i];
    const bool failed_for_good = seen.job_failed || (i < seen.failed_index.size() && seen.failed_index[i]);
    if (!index) {
        if (seen.job_complete) {
            return {JobState::succeeded, 0}; // Complete: every index succeeded (its pod since removed)
        }
        if (failed_for_good) {
            return {seen.job_failed ? JobState::cancelled : JobState::failed, std::nullopt};
        }
        if (pending_reason.empty()) {
            pending_reason = "waiting for the Job controller to start it";
        }
        return {JobState::pending, std::nullopt};
    }
    const PodObservation& pod = index->pod;
    switch (pod.state) {
    case JobState::succeeded:
        return {JobState::succeeded, 0};
    case JobState::failed:
        if (seen.job_failed && index->deleting) {
            return {JobState::cancelled, std::nullopt}; // stopped as the Job gave up
        }
        if (failed_for_good && !(index->disrupted && !seen.job_failed)) {
            return {JobState::failed, pod.exit_code};
        }
        if (pending_reason.empty()) {
            pending_reason = pod.reason + "; waiting for the Job controller to run it again";
        }
        return {JobState::pending, std::nullopt};
    default:
        if (seen.job_failed) {
            return {JobState::cancelled, std::nullopt};
        }
        if (pod.state == JobState::pending && pending_reason.empty()) {
            pending_reason = pod.reason;
        }
        return {pod.state, std::nullopt};
    }
}

} // namespace

JobUpdate sweep_job_update(const Sweep& sweep, const SweepObservation& seen) {
    std::vector<ElementState> elements;
    elements.reserve(sweep.size());
    std::string pending_reason;
    for (std::size_t i = 0; i < sweep.size(); ++i) {
        elements.push_back(i < seen.indexes.size() ? element_of(seen, i, pending_reason)
                                                   : ElementState{JobState::pending, std::nullopt});
    }
    JobUpdate u = sweep_update(sweep, elements, pending_reason);
    if (seen.job_failed) {
        u.state = JobState::failed;
        if (!seen.failed_reason.empty()) {
            u.reason = seen.failed_reason + "; " + u.reason;
        }
    } else if (seen.job_complete) {
        u.state = JobState::succeeded;
        u.exit_code = 0;
    } else if (seen.suspended) {
        u.state = JobState::pending;
        u.reason = "the Job is suspended; " + u.reason;
        u.exit_code.reset();
    } else if (is_terminal(u.state)) { // every element ended; the Job's condition follows
        u.state = JobState::running;
        u.reason = "completing; " + u.reason;
        u.exit_code.reset();
    }
    return u;
}

} // namespace tandem::k8s::detail
