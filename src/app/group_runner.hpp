#pragma once
// Pipelines and job groups at run time (docs/ARCHITECTURE.md, "Pipelines and job groups"). A group is a
// row of the store (backend "group", no remote id) with one row per member. Nothing runs in the
// background: whoever looks at a group (launch while it follows, status, logs) refreshes its members and
// carries out what core/job_group.hpp decides: publishes the address book once every member has started,
// stops the other members when the primaries ended (after termination_delay) or when one failed, and
// stores the group's state.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/job_tracker.hpp"
#include "app/submission.hpp"
#include "core/job_group.hpp"
#include "core/task_group.hpp"

namespace tandem::app {

struct GroupView {
    JobView group;
    std::vector<JobView> members; // in the group's order
};

// Submits pipeline stage `index` (only launch can: it holds the stages' specs, secrets included).
using StageSubmitter = std::function<void(std::size_t index)>;

// Refreshes `jobs` with one fan-out: plain jobs as refresh_jobs does, and for every group among them its
// members, after which each group is advanced. Members listed on their own are shown as plain jobs.
struct RefreshedJobs {
    std::vector<JobView> plain;
    std::vector<GroupView> groups;
    std::vector<bool> is_group; // per entry of `jobs`, in order
};
RefreshedJobs refresh_with_groups(Session& session, std::vector<JobRecord> jobs, bool refresh = true);

// Reads a group and its members from the store, refreshes and advances it.
Result<GroupView> refresh_group(Session& session, std::int64_t group_id,
                                const StageSubmitter& submit_stage = {});

// Refreshes and advances the group until it has ended, calling `each` with every look.
Result<GroupView> follow_group(Session& session, std::int64_t group_id, const StageSubmitter& submit_stage,
                               const std::function<void(const GroupView&)>& each = {});

// Cancels every member still active on its backend, then the group. Returns the first error (the others
// are still tried).
Status cancel_group(Session& session, const GroupView& view);

// Stops one member: the backend cancels it (Slurm's scancel and Kubernetes' delete both give the
// processes a TERM first), then its row says why. A member never submitted is only marked.
Status stop_member(Session& session, JobRecord& member, const std::string& reason);

// The addresses published to the group's members, by member (empty before publishing).
std::map<std::string, std::vector<std::string>> published_hosts(const JobRecord& group);
bool addresses_published(const JobRecord& group);

// "pipeline" or "job group".
const char* group_word(GroupKind kind);

// A group this process launched: it holds the members' specs (secrets included) and failovers, so it
// alone submits a pipeline's later stages and moves members past their pending timeouts.
struct GroupLaunch {
    GroupKind kind = GroupKind::parallel;
    std::string name;
    std::string source_file;
    JobRecord group;
    std::vector<TaskSpec> specs;
    std::vector<Failover> failovers; // one per member; each refers to its spec above
    std::vector<PendingTimeouts> timeouts;

    void submit_stage(std::size_t index);
    void move_on_if_stuck(const GroupView& view);
};

// Places every member (all or nothing), records the group and its members, and submits the first ones (a
// pipeline's first stage; every member of a job group), each cluster at once. A member that cannot be
// submitted stops the others and fails the group.
Result<std::unique_ptr<GroupLaunch>> start_group(Session& session, TaskGroup group,
                                                 const std::optional<std::string>& pending_timeout);
// Follows a started group until it has ended: later stages, pending timeouts, publishing, stopping.
Result<GroupView> follow_launch(Session& session, GroupLaunch& launch,
                                const std::function<void(const GroupView&)>& each = {});

// How long a member waits for the addresses by default, seconds.
inline constexpr std::int64_t k_default_group_wait = 600;

} // namespace tandem::app
