// `tandem launch FILE`: plan, record, submit, then follow the output (default), wait (--wait) or
// return at once (--detach). The job is recorded before the submit so nothing is ever lost; a failed
// submit leaves a FAILED record that says why.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/task_planning.hpp"

namespace tandem::cli {

namespace {

struct LaunchFlags {
    SpecFlags spec;
    bool detach = false;
    bool wait = false;
    bool json = false;
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
    auto id = (*store)->insert(job);
    if (!id) {
        return tl::unexpected(id.error());
    }
    job.id = *id;
    return job;
}

Result<int> launch(Context& ctx, const LaunchFlags& flags) {
    // Planning may use an inventory up to 30 s old: free capacity only shapes the score, and a submit
    // should not pay two extra round trips per cluster.
    auto planned = plan_task(ctx, flags.spec, std::chrono::seconds(30));
    if (!planned) {
        return tl::unexpected(planned.error());
    }
    if (planned->plan.placements.empty()) {
        return tl::unexpected(no_placement_error(*planned));
    }
    const Placement& placement = planned->plan.placements.front();
    auto backend = ctx.backend(placement.cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    auto job = record_job(ctx, *planned, placement);
    if (!job) {
        return tl::unexpected(job.error());
    }
    auto store = *ctx.store();
    auto remote_id = (*backend)->submit(planned->spec, placement, job->id);
    if (!remote_id) {
        JobUpdate failed{JobState::failed, "submit failed: " + remote_id.error().message, std::nullopt,
                         std::nullopt, now_seconds()};
        (void)store->update(job->id, failed, now_seconds());
        Error e = remote_id.error();
        e.message = fmt::format("job {}: submit to {} failed: {}", job->id, placement.cluster, e.message);
        return tl::unexpected(e);
    }
    if (auto ok = store->set_remote_id(job->id, *remote_id); !ok) {
        return tl::unexpected(ok.error());
    }
    job->remote_id = *remote_id;
    note(fmt::format("tandem: job {} ({}) submitted to {}/{} as {} [{}]", job->id, job->name,
                     placement.cluster, placement.pool, *remote_id, placement.option_label));
    if (flags.detach) {
        // No refresh here: the job was just submitted, and `status` asks the backend when someone looks.
        flags.json ? print_json(job_json(*job, false, {})) : print_stdout(fmt::format("{}\n", job->id));
        return exit_code::ok;
    }
    JobView view = refresh_jobs(ctx, {*job}).front();
    if (!flags.wait && !flags.json) {
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
    command.footer(
        "Without --detach or --wait, launch follows the job's output until it ends and exits with\n"
        "the job's exit code. Progress goes to stderr; the job's output and results to stdout.");
    command.callback([flags, &action] { action = [flags](Context& ctx) { return launch(ctx, *flags); }; });
}

} // namespace tandem::cli
