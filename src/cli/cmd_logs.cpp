// `tandem logs JOB`: print the job's output; with -f follow it until the job ends, then say how it
// ended (stderr) and exit with the job's exit code.

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/groups.hpp"
#include "cli/output.hpp"
#include "core/sweep.hpp"

namespace tandem::cli {

namespace {

struct LogsFlags {
    std::string job;
    bool follow = false;
    std::optional<int> tail;
    std::optional<int> node;
    std::optional<std::string> member;
    std::optional<int> element;
};

Result<int> group_logs_command(Context& ctx, const JobRecord& group, const LogsFlags& flags) {
    auto header = group_header_from_json(group.spec_json);
    if (!header) {
        return tl::unexpected(header.error());
    }
    if (flags.member &&
        std::find(header->members.begin(), header->members.end(), *flags.member) == header->members.end()) {
        std::string names;
        for (const auto& m : header->members) {
            names += (names.empty() ? "" : ", ") + m;
        }
        return fail(ErrorKind::usage,
                    fmt::format("--member {}: job group {} has members {}", *flags.member, group.id, names));
    }
    auto view = group_logs(ctx, group.id, GroupLogOptions{flags.follow, flags.tail, flags.node, flags.member});
    if (!view) {
        return tl::unexpected(view.error());
    }
    if (!flags.follow) {
        return exit_code::ok;
    }
    note("tandem: " + group_summary(*view));
    return job_exit_code(view->group);
}

Result<int> logs(Context& ctx, const LogsFlags& flags) {
    auto job = find_job(ctx, flags.job);
    if (!job) {
        return tl::unexpected(job.error());
    }
    if (job->is_group()) {
        return group_logs_command(ctx, *job, flags);
    }
    if (flags.member) {
        return fail(ErrorKind::usage, fmt::format("--member: job {} is not a pipeline or job group", job->id));
    }
    if (job->remote_id.empty()) {
        return fail(ErrorKind::not_found,
                    fmt::format("job {} was never submitted: {}", job->id, job->reason));
    }
    if (flags.node && (*flags.node < 0 || *flags.node >= job->num_nodes)) {
        return fail(ErrorKind::usage, fmt::format("--node {}: job {} has {} node(s), ranks 0..{}",
                                                  *flags.node, job->id, job->num_nodes, job->num_nodes - 1));
    }
    if (flags.element) {
        const auto sweep = sweep_of(*job);
        if (!sweep) {
            return fail(ErrorKind::usage, fmt::format("--element: job {} is not a sweep", job->id));
        }
        if (*flags.element < 0 || static_cast<std::size_t>(*flags.element) >= sweep->size()) {
            return fail(ErrorKind::usage, fmt::format("--element {}: sweep {} has elements 0..{}",
                                                      *flags.element, job->id, sweep->size() - 1));
        }
    }
    auto backend = ctx.backend(job->cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    auto streamed = (*backend)->logs(*job, LogOptions{flags.follow, flags.tail, flags.node, flags.element},
                                     [](std::string_view chunk) {
                                         print_stdout(std::string(chunk));
                                         return true;
                                     });
    if (!streamed) {
        return tl::unexpected(streamed.error());
    }
    if (!flags.follow) {
        return exit_code::ok;
    }
    JobView view = wait_for_job(ctx, *job);
    note("tandem: " + job_summary(view));
    return job_exit_code(view);
}

} // namespace

void setup_logs(CLI::App& command, Action& action) {
    auto flags = std::make_shared<LogsFlags>();
    command.add_option("JOB", flags->job, "Job id")->required();
    command.add_flag("-f,--follow", flags->follow,
                     "Follow the output until the job ends; exit with its code");
    command.add_option("--tail", flags->tail, "Start with the last N lines")->check(CLI::NonNegativeNumber);
    command.add_option("--node", flags->node, "Only this node's output (rank K)");
    command.add_option("--member", flags->member,
                       "A pipeline or job group: only this member's output (default: every member's, each "
                       "line prefixed [member/rank])");
    command.add_option("--element", flags->element,
                       "A sweep: only this element's output (its index; default: every element's, each line "
                       "prefixed [values])");
    command.callback([flags, &action] { action = [flags](Context& ctx) { return logs(ctx, *flags); }; });
}

} // namespace tandem::cli
