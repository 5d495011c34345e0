// `tandem launch FILE`: plan, record, submit, then follow the output (default), wait (--wait) or
// return at once (--detach). The job is recorded before the submit so nothing is ever lost; a failed
// submit leaves a FAILED record that says why.

#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/failover.hpp"
#include "cli/groups.hpp"
#include "cli/launch_lock.hpp"
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

Result<JobRecord> record_job(Context& ctx, const PlannedTask& planned, const Placement& placement) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    JobRecord job;
    job.name = planned.spec.name;
    job.cluster = placement.cluster;
    job.backend = std::string(to_string(placement.kind));
    job.state = JobState::pending;
    job.submitted_at = now_seconds();
    job.updated_at = job.submitted_at;
    job.spec_json = to_redacted_json(planned.spec).dump();
    job.placement_json = placement_json(placement).dump();
    job.gpus = placement_gpus(planned.spec, placement);
    job.num_nodes = planned.spec.num_nodes;
    // The lock first: a job in the store without a live launch holding its lock is one `status` settles.
    job.submit_token = new_submit_token();
    if (auto held = hold_launch_lock(ctx.paths().state_dir, job.submit_token); !held) {
        return tl::unexpected(held.error());
    }
    auto id = (*store)->insert(job);
    if (!id) {
        release_launch_lock(ctx.paths().state_dir, job.submit_token);
        return tl::unexpected(id.error());
    }
    job.id = *id;
    return job;
}

// Waits while the job is PENDING, moving it on when it has waited `timeout` for resources; returns once it
// has left PENDING (started, ended) on whatever placement it has then.
Result<JobView> wait_while_pending(Context& ctx, Failover& failover, const PendingTimeouts& timeouts) {
    auto delay = std::chrono::milliseconds(500);
    bool told = false;
    for (;;) {
        JobView view = refresh_jobs(ctx, {failover.job()}).front();
        if (view.record.state != JobState::pending || view.record.remote_id.empty()) {
            return view;
        }
        const auto limit = timeouts.for_backend(view.record.backend);
        if (!limit) { // this placement waits for ever; the job stays here
            return view;
        }
        const std::int64_t timeout = *limit;
        if (!told && waiting_for_resources(view.record) && failover.can_move_on()) {
            note(fmt::format("tandem: job {} is pending on {} ({}); moving on after {}", view.record.id,
                             view.record.cluster, view.record.reason.empty() ? "queued" : view.record.reason,
                             human_duration(timeout)));
            told = true;
        }
        auto moved = failover.move_on_if_stuck(view, timeout);
        if (!moved) {
            return tl::unexpected(moved.error());
        }
        if (*moved) {
            told = false;
            delay = std::chrono::milliseconds(500);
            continue;
        }
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 3 / 2, std::chrono::milliseconds(2000));
    }
}

Result<int> launch(Context& ctx, const LaunchFlags& flags) {
    // Planning may use an inventory up to 30 s old: free capacity only shapes the score, and a submit
    // should not pay two extra round trips per cluster.
    auto loaded = load_task_or_group(ctx, flags.spec);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    if (loaded->group) {
        return launch_group(ctx, std::move(*loaded->group),
                            GroupLaunchOptions{flags.detach, flags.wait, flags.json, flags.pending_timeout});
    }
    if (loaded->task->service) {
        return fail(ErrorKind::invalid_spec,
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
    auto timeout = pending_timeouts(ctx, flags.pending_timeout, planned->spec);
    if (!timeout) {
        return tl::unexpected(timeout.error());
    }
    const Placement& first = planned->plan.placements.front();
    if (auto backend = ctx.backend(first.cluster); !backend) {
        return tl::unexpected(backend.error());
    }
    auto job = record_job(ctx, *planned, first);
    if (!job) {
        return tl::unexpected(job.error());
    }
    Failover failover(ctx, planned->spec, planned->plan.placements, *job);
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
        auto waited = wait_while_pending(ctx, failover, *timeout);
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
