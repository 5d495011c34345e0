#pragma once
// Pipelines and job groups at run time (docs/ARCHITECTURE.md, "Pipelines and job groups"). A group is a
// row of the store (backend "group", no remote id) with one row per member. Nothing runs in the
// background: whoever looks at a group (launch while it follows, status, logs) refreshes its members and
// carries out what core/job_group.hpp decides: publishes the address book once every member has started,
// stops the other members when the primaries ended (after termination_delay) or when one failed, and
// stores the group's state.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "core/job_group.hpp"
#include "core/task_group.hpp"

namespace tandem::cli {

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
RefreshedJobs refresh_with_groups(Context& ctx, std::vector<JobRecord> jobs, bool refresh = true);

// Reads a group and its members from the store, refreshes and advances it.
Result<GroupView> refresh_group(Context& ctx, std::int64_t group_id, const StageSubmitter& submit_stage = {});

// Cancels every member still active on its backend, then the group. Returns the first error (the others
// are still tried).
Status cancel_group(Context& ctx, const GroupView& view);

struct GroupLogOptions {
    bool follow = false;
    std::optional<int> tail;
    std::optional<int> node;
    std::optional<std::string> member;
};
// Prints the members' output with [member/rank] prefixes; with follow, until the group has ended
// (advancing it meanwhile). Returns the group as it ended (or stands).
Result<GroupView> group_logs(Context& ctx, std::int64_t group_id, const GroupLogOptions& options,
                             const StageSubmitter& submit_stage = {});

struct GroupLaunchOptions {
    bool detach = false;
    bool wait = false;
    bool json = false;
    std::optional<std::string> pending_timeout;
};
Result<int> launch_group(Context& ctx, TaskGroup group, const GroupLaunchOptions& options);

nlohmann::json group_json(const GroupView& view);
// The addresses published to the group's members, by member (empty before publishing).
std::map<std::string, std::vector<std::string>> published_hosts(const JobRecord& group);
std::string group_summary(const GroupView& view);

} // namespace tandem::cli
