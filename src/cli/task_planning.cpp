// What launch and plan share on the command line: the SkyPilot-style flags, and the flags' file loaded
// and planned through the app layer (app/planning.hpp).

#include "core/job_recovery.hpp"
#include "cli/task_planning.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/quantity.hpp"

namespace tandem::cli {

void add_spec_flags(CLI::App& command, SpecFlags& flags) {
    command.add_option("FILE", flags.file, "Task YAML (SkyPilot format)")->required();
    command.add_option("--env", flags.overrides.envs, "Set an env var: K=V, or K to copy it from here")
        ->type_name("K[=V]");
    command.add_option("--secret", flags.overrides.secrets, "Set a secret: K=V, or K to copy it from here")
        ->type_name("K[=V]");
    command.add_option("--gpus", flags.overrides.gpus,
                       "Accelerators, e.g. H100:8 (replaces resources.accelerators)");
    command.add_option("--cpus", flags.overrides.cpus, "CPUs per node, e.g. 8 or 8+");
    command.add_option("--memory", flags.overrides.memory, "Memory per node, e.g. 64GB or 64+");
    command.add_option("--num-nodes", flags.overrides.num_nodes, "Number of nodes");
    command.add_option("--infra", flags.overrides.infra,
                       "Pin: local, slurm[/CLUSTER[/PARTITION]], k8s[/CONTEXT]");
    command.add_option("-n,--name", flags.overrides.name, "Job name");
    command
        .add_option("--sweep", flags.overrides.sweep_axes,
                    "Run once per value (repeatable: the grid of all), as one job; \\, is a comma in a "
                    "value (replaces the file's sweep)")
        ->type_name("K=V1,V2");
    command
        .add_option("--num-jobs", flags.overrides.num_jobs,
                    "Run N copies as one job; each sees SKYPILOT_JOB_RANK (replaces the file's sweep)")
        ->type_name("N");
    command
        .add_option("--sweep-parallel", flags.overrides.sweep_parallel,
                    "Run at most N elements of the sweep at once")
        ->type_name("N");
}

Result<TaskSpec> load_task(Context& ctx, const SpecFlags& flags) {
    auto loaded = app::load_task_or_group(ctx, flags.file, flags.overrides);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    if (loaded->group) {
        const auto& g = *loaded->group;
        return fail(
            ErrorKind::invalid_spec,
            fmt::format("{}: a {} of {} tasks ({}); launching pipelines and job groups is not built yet",
                        flags.file, g.kind == GroupKind::parallel ? "job group" : "pipeline",
                        g.members.size(), g.name),
            fmt::format("`tandem plan {}` shows where each task would run", flags.file));
    }
    return std::move(*loaded->task);
}

Result<PlannedTask> plan_task(Context& ctx, const SpecFlags& flags, std::chrono::seconds max_age) {
    auto spec = load_task(ctx, flags);
    if (!spec) {
        return tl::unexpected(spec.error());
    }
    return plan_loaded_task(ctx, std::move(*spec), max_age);
}

int job_exit_code(const JobView& view) {
    if (view.unreachable) {
        return job_exit::unknown;
    }
    return exit_code_for(view.record.state, view.record.exit_code, view.record.started_at.has_value());
}

std::string job_summary(const JobView& view) {
    const auto& r = view.record;
    std::string state(view.unreachable ? "UNKNOWN" : to_string(r.state));
    std::string reason = view.unreachable ? view.unreachable_reason : r.reason;
    if (const auto summary = recoveries_summary(r.recoveries); !summary.empty() && !view.unreachable) {
        reason += (reason.empty() ? "after " : ", after ") + summary;
    }
    return reason.empty() ? fmt::format("job {} ({}) {}", r.id, r.name, state)
                          : fmt::format("job {} ({}) {}: {}", r.id, r.name, state, reason);
}

} // namespace tandem::cli
