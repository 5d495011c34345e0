#pragma once
// Tracking: what the clusters say of the jobs the store holds. One backend call per cluster, every
// cluster at once (app/fanout.hpp); what changed is stored; a launch that died before it stored its
// remote id is settled (the cluster is asked for its submit token). Nothing runs in the background:
// whoever looks (status, logs, launch while it follows) refreshes.

#include <cstdint>
#include <string>
#include <vector>

#include "app/session.hpp"

namespace tandem::app {

// A job as the commands show it: the stored record, and whether its cluster could not be reached just now.
struct JobView {
    JobRecord record;
    bool unreachable = false;
    std::string unreachable_reason;
};

// Refreshes the non-terminal jobs among `jobs` with one backend call per cluster, stores what changed,
// and returns every job (in the same order) as it now stands.
std::vector<JobView> refresh_jobs(Session& session, std::vector<JobRecord> jobs);

// Reads job `id` or fails with not_found.
Result<JobRecord> find_job(Session& session, const std::string& id_text);

// Waits for a job to end (refreshing through its backend, reporting an unreachable cluster once per
// reason); returns the final view.
JobView wait_for_job(Session& session, const JobRecord& job);

// Cancels `job` on its cluster (when it was submitted), then records it CANCELLED with `reason`. A cancel
// the backend refused leaves the record as it was.
Status cancel_job(Session& session, JobRecord& job, const std::string& reason);

// `cancel ID --element K`: cancels element `element` of sweep `job` on its cluster (a usage error when
// the job is no sweep or has no such element; a backend that cannot says so), then records that element
// CANCELLED; the sweep's row follows from its elements at the next refresh. False: the element had ended
// already (nothing was asked of the cluster).
Result<bool> cancel_element(Session& session, JobRecord& job, std::size_t element);

} // namespace tandem::app
