#pragma once
// Submission: a job is recorded once (with its launch lock, app/launch_lock.hpp), then submitted through
// its failover. Failover: one tandem job, several placements over its life. A submit the backend declines (capacity,
// quota, partition, admission) moves to the next candidate of the plan at once; a job still waiting for
// resources after its pending timeout is cancelled and placed on the next candidate. The job keeps its id;
// every placement it leaves is kept as an attempt (`status JOB` shows them). The old copy is always
// cancelled, and the cancel accepted, before the next submit: no path leaves two live copies.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/job_tracker.hpp"
#include "core/planner.hpp"

namespace tandem::app {

class Failover {
public:
    // `candidates` in plan order; `job` is the stored record, not yet submitted, placed on candidates[0].
    Failover(Session& ctx, const TaskSpec& spec, std::vector<Placement> candidates, JobRecord job);

    // Submits to the current candidate, moving on past every refusal. On success the job has its
    // remote id; when every candidate declined, the job is FAILED and the error lists each refusal.
    // `first`: the outcome of a submit to the current candidate already made elsewhere (a job group
    // submits its members concurrently, then lets each one's failover carry on from there).
    Status submit(std::optional<Result<std::string>> first = std::nullopt);

    // With the job just refreshed as `view`: if it has been PENDING for lack of resources for
    // `timeout_seconds` on this placement and another candidate remains, cancels it here and submits it
    // to the next one. Returns true when the job moved (or tried to and failed for good: see submit()).
    Result<bool> move_on_if_stuck(const JobView& view, std::int64_t timeout_seconds);

    // Whether a pending timeout has somewhere to send the job (another cluster or pool).
    bool can_move_on() const { return next_candidate(true).has_value(); }
    const JobRecord& job() const { return m_job; }
    Session& session() const { return m_ctx; }
    const Placement& placement() const { return m_candidates[m_current]; }
    std::int64_t placed_at() const { return m_placed_at; }

private:
    std::optional<std::size_t> next_candidate(bool skip_same_pool) const;
    Result<bool> move_to(std::size_t next, const std::string& outcome);

    Session& m_ctx;
    const TaskSpec& m_spec;
    std::vector<Placement> m_candidates;
    std::size_t m_current = 0;
    JobRecord m_job;
    std::int64_t m_placed_at = 0;
    std::vector<std::string> m_refusals; // "cluster/pool: why", for the final error
};

// Records the job about to be submitted to `placement` (PENDING, with `reason`; a group member under
// `parent`), holding its launch lock first: a job in the store without a live launch holding its lock is
// one `status` settles.
Result<JobRecord> record_job(Session& ctx, const TaskSpec& spec, const Placement& placement,
                             std::optional<std::int64_t> parent = std::nullopt, const std::string& reason = {});

// What `job` says of itself on its cluster (core/identity.hpp): its token and name, the launching
// machine, a digest of its spec and this tandem's version; a member names its group (the group row's
// token and name). The backend fills in the cluster's user.
JobIdentity identity_of(Session& ctx, const JobRecord& job);

// How long a job may wait for resources on one placement before it moves on, by backend.
struct PendingTimeouts {
    std::optional<std::int64_t> any; // --pending-timeout, config.pending_timeout, config.yaml's
    // SkyPilot's config.<backend>.provision_timeout, by BackendKind (its row's provision_timeout); -1: none
    std::array<std::optional<std::int64_t>, k_backend_kinds> own;
    bool from_task_or_flag = false; // said on --detach (a config-wide default is not)

    // `backend` is a job record's backend name ("slurm", "k8s").
    std::optional<std::int64_t> for_backend(std::string_view backend) const {
        const auto kind = backend_kind_from_string(backend);
        if (const auto& mine = kind ? own[static_cast<std::size_t>(*kind)] : std::nullopt) {
            return *mine < 0 ? std::nullopt : mine;
        }
        return any;
    }
    bool set() const {
        return any || std::any_of(own.begin(), own.end(), [](const auto& t) { return t.value_or(-1) >= 0; });
    }
};

// --pending-timeout for every backend; else the task's config.<backend>.provision_timeout for that
// backend, then the task's config.pending_timeout, then the config file's pending_timeout.
Result<PendingTimeouts> pending_timeouts(Session& ctx, const std::optional<std::string>& flag,
                                         const TaskSpec& spec);

// Waits while the job is PENDING, moving it on when it has waited its timeout for resources; returns once
// it has left PENDING (started, ended) on whatever placement it has then.
Result<JobView> wait_while_pending(Session& ctx, Failover& failover, const PendingTimeouts& timeouts);

// Whether a PENDING reason means "waiting for resources" (a pending timeout applies), rather than a hold,
// a dependency or a begin time, which no other cluster would change.
bool waiting_for_resources(const JobRecord& job);

} // namespace tandem::app
