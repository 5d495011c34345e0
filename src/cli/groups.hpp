#pragma once
// Pipelines and job groups as the command line shows them: JSON, summary lines, the members' output, and
// `launch` of a group file. Their lifecycle is app/group_runner.hpp's.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/group_runner.hpp"
#include "cli/context.hpp"

namespace tandem::cli {

using app::addresses_published;
using app::cancel_group;
using app::follow_group;
using app::GroupView;
using app::published_hosts;
using app::refresh_group;
using app::refresh_with_groups;
using app::RefreshedJobs;
using app::StageSubmitter;

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
std::string group_summary(const GroupView& view);

} // namespace tandem::cli
