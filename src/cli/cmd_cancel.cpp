// `tandem cancel JOB... | --all | JOB --element K`: the backend cancels natively (and so reports CANCELLED
// itself to any refresh that races with us), then the record is marked CANCELLED. A cancel the backend
// refused leaves the record as it was.

#include <optional>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/groups.hpp"
#include "cli/output.hpp"
#include "core/sweep.hpp"

namespace tandem::cli {

namespace {

struct CancelFlags {
    std::vector<std::string> jobs;
    bool all = false;
    bool json = false;
    std::optional<int> element;
};

// `cancel ID --element K`: one element of one sweep.
Result<int> cancel_one_element(Context& ctx, const CancelFlags& flags) {
    if (flags.all || flags.jobs.size() != 1) {
        return fail(ErrorKind::usage, "--element cancels one element of one sweep: name one job");
    }
    if (*flags.element < 0) {
        return fail(ErrorKind::usage,
                    fmt::format("--element {}: elements are numbered from 0", *flags.element));
    }
    auto job = find_job(ctx, flags.jobs.front());
    if (!job) {
        return tl::unexpected(job.error());
    }
    auto views = refresh_jobs(ctx, {*job});
    JobRecord target = views.empty() ? *job : views.front().record;
    const auto element = static_cast<std::size_t>(*flags.element);
    auto done = app::cancel_element(ctx, target, element);
    if (!done) {
        return tl::unexpected(done.error());
    }
    const auto sweep = sweep_of(target);
    const std::string label = sweep ? sweep_element_label(*sweep, element) : std::string();
    if (!*done) {
        note(fmt::format("tandem: job {} element {} ({}) already ended", target.id, element, label));
    }
    if (flags.json) {
        print_json(nlohmann::json{{"cancelled", *done ? nlohmann::json::array({{{"id", target.id},
                                                                                {"name", target.name},
                                                                                {"element", element},
                                                                                {"state", "CANCELLED"}}})
                                                      : nlohmann::json::array()}});
    } else if (*done) {
        print_stdout(
            fmt::format("job {} ({}) element {} ({}) cancelled\n", target.id, target.name, element, label));
    }
    return exit_code::ok;
}

Result<int> cancel(Context& ctx, const CancelFlags& flags) {
    if (flags.jobs.empty() && !flags.all) {
        return fail(ErrorKind::usage, "name the jobs to cancel, or pass --all");
    }
    if (flags.element) {
        return cancel_one_element(ctx, flags);
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    std::vector<JobRecord> jobs;
    if (flags.all) {
        store::JobFilter filter;
        filter.active_only = true;
        auto listed = (*store)->list(filter);
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        jobs = std::move(*listed);
    }
    for (const auto& text : flags.jobs) {
        auto job = find_job(ctx, text);
        if (!job) {
            return tl::unexpected(job.error());
        }
        jobs.push_back(*job);
    }
    int rc = exit_code::ok;
    auto results = nlohmann::json::array();
    // Groups: every member on every backend, then the group. With --all, members are listed (active)
    // on their own and cancelled as jobs; their groups follow below.
    std::vector<JobRecord> plain;
    std::set<std::int64_t> group_ids;
    for (const auto& job : jobs) {
        if (job.is_group()) {
            group_ids.insert(job.id);
        }
    }
    for (auto& job : jobs) {
        if (!job.is_group()) {
            if (!job.parent_id || !group_ids.count(*job.parent_id)) {
                plain.push_back(std::move(job));
            }
            continue;
        }
        auto view = refresh_group(ctx, job.id);
        if (!view) {
            return tl::unexpected(view.error());
        }
        if (is_terminal(view->group.record.state)) {
            note(fmt::format("tandem: job group {} already ended ({})", job.id,
                             to_string(view->group.record.state)));
            continue;
        }
        if (auto ok = cancel_group(ctx, *view); !ok) {
            note(fmt::format("tandem: error: job group {}: cancel failed: {}", job.id, ok.error().message));
            rc = exit_code_for(ok.error().kind);
            continue;
        }
        results.push_back({{"id", job.id}, {"name", job.name}, {"state", "CANCELLED"}});
        if (!flags.json) {
            print_stdout(fmt::format("job group {} ({}) cancelled, with its {} members\n", job.id, job.name,
                                     view->members.size()));
        }
    }
    jobs = std::move(plain);
    // A job that ended since it was last looked at is reported as it ended, not as cancelled.
    for (const auto& view : refresh_jobs(ctx, std::move(jobs))) {
        const JobRecord& job = view.record;
        if (is_terminal(job.state)) {
            note(fmt::format("tandem: job {} already ended ({})", job.id, to_string(job.state)));
            continue;
        }
        JobRecord target = job;
        if (auto done = app::cancel_job(ctx, target, std::string(k_user_cancel_reason)); !done) {
            note(fmt::format("tandem: error: job {}: cancel on {} failed: {}", job.id, job.cluster,
                             done.error().message));
            rc = exit_code_for(done.error().kind);
            continue;
        }
        results.push_back({{"id", job.id}, {"name", job.name}, {"state", "CANCELLED"}});
        if (!flags.json) {
            print_stdout(fmt::format("job {} ({}) cancelled\n", job.id, job.name));
        }
    }
    if (flags.json) {
        print_json(nlohmann::json{{"cancelled", results}});
    }
    return rc;
}

} // namespace

void setup_cancel(CLI::App& command, Action& action) {
    auto flags = std::make_shared<CancelFlags>();
    command.add_option("JOB", flags->jobs, "Job ids");
    command.add_flag("-a,--all", flags->all, "Every active job");
    command.add_option("--element", flags->element,
                       "Only this element (index K) of a sweep; the others run on (Slurm, local)");
    command.add_flag("--json", flags->json, "JSON on stdout: {\"cancelled\": [{id, name, state}]}");
    command.callback([flags, &action] { action = [flags](Context& ctx) { return cancel(ctx, *flags); }; });
}

} // namespace tandem::cli
