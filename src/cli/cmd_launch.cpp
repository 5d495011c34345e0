// `tandem launch FILE`: plan, record, submit, then follow the output (default), wait (--wait) or
// return at once (--detach). The job is recorded before the submit so nothing is ever lost; a failed
// submit leaves a FAILED record that says why.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/submission.hpp"
#include "cli/commands.hpp"
#include "cli/groups.hpp"
#include "cli/output.hpp"
#include "cli/task_planning.hpp"
#include "core/quantity.hpp"

namespace tandem::cli {

namespace {

struct LaunchFlags {
    SpecFlags spec;
    bool detach = false;
    bool wait = false;
    bool json = false;
    std::optional<std::string> pending_timeout;
};

Result<int> launch(Context& ctx, const LaunchFlags& flags) {
    // Planning may use an inventory up to 30 s old: free capacity only shapes the score, and a submit
    // should not pay two extra round trips per cluster.
    auto loaded = app::load_task_or_group(ctx, flags.spec.file, flags.spec.overrides);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    if (loaded->group) {
        return launch_group(ctx, std::move(*loaded->group),
                            GroupLaunchOptions{flags.detach, flags.wait, flags.json, flags.pending_timeout});
    }
    if (loaded->task->service) {
        return fail(
            ErrorKind::invalid_spec,
            fmt::format("{}: the task has a `service:` section: it is a service, not a job", flags.spec.file),
            fmt::format("tandem serve up {} starts it", flags.spec.file));
    }
    auto planned = plan_loaded_task(ctx, std::move(*loaded->task), std::chrono::seconds(30));
    if (!planned) {
        return tl::unexpected(planned.error());
    }
    if (planned->plan.placements.empty()) {
        return tl::unexpected(no_placement_error(*planned));
    }
    auto timeout = app::pending_timeouts(ctx, flags.pending_timeout, planned->spec);
    if (!timeout) {
        return tl::unexpected(timeout.error());
    }
    const Placement& first = planned->plan.placements.front();
    if (auto backend = ctx.backend(first.cluster); !backend) {
        return tl::unexpected(backend.error());
    }
    auto job = app::record_job(ctx, planned->spec, first);
    if (!job) {
        return tl::unexpected(job.error());
    }
    app::Failover failover(ctx, planned->spec, planned->plan.placements, *job);
    if (auto submitted = failover.submit(); !submitted) {
        return tl::unexpected(submitted.error());
    }
    if (flags.detach) {
        // Said when this launch asked for it; a config-wide default is not worth a line per launch.
        if (timeout->from_task_or_flag && timeout->set()) {
            note("tandem: the pending timeout applies while launch waits; with --detach nothing moves the "
                 "job");
        }
        // No refresh here: the job was just submitted, and `status` asks the backend when someone looks.
        flags.json ? print_json(job_json(failover.job(), false, {}))
                   : print_stdout(fmt::format("{}\n", failover.job().id));
        return exit_code::ok;
    }
    JobView view;
    if (timeout->set()) {
        auto waited = app::wait_while_pending(ctx, failover, *timeout);
        if (!waited) {
            return tl::unexpected(waited.error());
        }
        view = std::move(*waited);
    } else {
        view = refresh_jobs(ctx, {failover.job()}).front();
    }
    if (!flags.wait && !flags.json) {
        auto backend = ctx.backend(view.record.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        note("tandem: following its output; Ctrl-C stops following, the job keeps running");
        auto streamed = (*backend)->logs(view.record, LogOptions{true, std::nullopt, std::nullopt},
                                         [](std::string_view chunk) {
                                             print_stdout(std::string(chunk));
                                             return true;
                                         });
        if (!streamed) {
            note(fmt::format("tandem: cannot follow the output: {}", streamed.error().message));
        }
    }
    view = wait_for_job(ctx, view.record);
    note("tandem: " + job_summary(view));
    if (flags.json) {
        print_json(job_json(view.record, view.unreachable, view.unreachable_reason));
    }
    return job_exit_code(view);
}

} // namespace

void setup_launch(CLI::App& command, Action& action) {
    auto flags = std::make_shared<LaunchFlags>();
    add_spec_flags(command, flags->spec);
    auto* detach = command.add_flag("-d,--detach", flags->detach, "Print the job id and return at once");
    command
        .add_flag("--wait", flags->wait,
                  "Wait for the job to end without showing its output; exit with its code")
        ->excludes(detach);
    command.add_flag("--json", flags->json, "Print the job as JSON on stdout (implies no log streaming)");
    command.add_option(
        "--pending-timeout", flags->pending_timeout,
        "Still pending for resources after this long (e.g. 10m): cancel it there and move it to "
        "the next candidate (default: config.pending_timeout)");
    command.footer(
        "Without --detach or --wait, launch follows the job's output until it ends and exits with\n"
        "the job's exit code. Progress goes to stderr; the job's output and results to stdout.\n"
        "A file of several YAML documents is a pipeline or a job group (SkyPilot's formats): every\n"
        "task is placed first (all or nothing), then submitted; launch prints one group id, follows\n"
        "every member ([member/rank] prefixes), publishes the members' addresses, stops the other\n"
        "members when the primary tasks end, and exits with the group's outcome.\n"
        "A cluster that declines the submit (capacity, quota, partition, admission) passes the job to\n"
        "the next candidate of `tandem plan`; so does a pending timeout, while launch waits.");
    command.callback([flags, &action] { action = [flags](Context& ctx) { return launch(ctx, *flags); }; });
}

} // namespace tandem::cli
