// `tandem plan FILE`: the dry run. Shows the chosen placement, every candidate with its score broken
// down, every rejected pool with its reason, and the native artifact the winner would receive.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/task_planning.hpp"
#include "core/quantity.hpp"
#include "core/task_group.hpp"

namespace tandem::cli {

namespace {

struct PlanFlags {
    SpecFlags spec;
    bool json = false;
};

std::string breakdown_text(const Placement& p) {
    std::string out;
    for (const auto& c : p.breakdown) {
        out += fmt::format("{}{}={:+g}", out.empty() ? "" : " ", c.name, c.value);
    }
    return out;
}

nlohmann::json notes_json(const TaskSpec& spec) {
    auto out = nlohmann::json::array();
    for (const auto& n : spec.notes) {
        out.push_back({{"field", n.field}, {"reason", n.note}});
    }
    return out;
}

// What `plan` shows of one task: the artifact of its first placement, as text or JSON.
struct TaskPlanView {
    const TaskSpec* spec = nullptr;
    const Plan* plan = nullptr;
    std::optional<std::string> artifact;
};

Result<TaskPlanView> view_of(Context& ctx, const TaskSpec& spec, const Plan& p) {
    TaskPlanView view{&spec, &p, std::nullopt};
    if (!p.placements.empty()) {
        auto backend = ctx.backend(p.placements.front().cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        auto rendered = (*backend)->render(spec, p.placements.front(), 0);
        if (!rendered) {
            return tl::unexpected(rendered.error());
        }
        view.artifact = *rendered;
    }
    return view;
}

nlohmann::json plan_json(const TaskPlanView& v) {
    const Plan& p = *v.plan;
    auto candidates = nlohmann::json::array();
    for (const auto& pl : p.placements) {
        candidates.push_back(placement_json(pl));
    }
    auto rejections = nlohmann::json::array();
    for (const auto& r : p.rejections) {
        rejections.push_back(
            {{"cluster", r.cluster}, {"pool", r.pool}, {"option", r.option_label}, {"reason", r.reason}});
    }
    return {{"task", to_redacted_json(*v.spec)},
            {"chosen", p.placements.empty() ? nlohmann::json(nullptr) : placement_json(p.placements.front())},
            {"candidates", candidates},
            {"rejections", rejections},
            {"ignored", notes_json(*v.spec)},
            {"artifact", v.artifact ? nlohmann::json(*v.artifact) : nlohmann::json(nullptr)}};
}

std::string plan_text(const TaskPlanView& v) {
    const Plan& p = *v.plan;
    const TaskSpec& spec = *v.spec;
    std::string out = fmt::format("Task {} ({}): {} node(s), {} option(s)\n", spec.name, spec.source_file,
                                  spec.num_nodes, spec.options().size());
    if (spec.sweep) {
        const auto& s = *spec.sweep;
        out += fmt::format("Sweep: {} element{} ({}), {}\n", s.size(), s.size() == 1 ? "" : "s",
                           s.keys.empty() ? std::string("ranks only")
                                          : "values of " + fmt::format("{}", fmt::join(s.keys, ", ")),
                           s.parallel > 0 ? fmt::format("at most {} at once", s.parallel)
                                          : std::string("all at once as the cluster allows"));
    }
    if (p.placements.empty()) {
        out += "\nChosen: none: no configured cluster can run this task\n";
    } else {
        const auto& best = p.placements.front();
        out += fmt::format("\nChosen: {}/{} [{}] score {:g}\n", best.cluster, best.pool, best.option_label,
                           best.score);
        for (const auto& why : best.ignored) {
            out += fmt::format("  {}\n", why);
        }
    }
    if (!spec.notes.empty()) {
        out += "\nIgnored everywhere:\n";
        for (const auto& n : spec.notes) {
            out += fmt::format("  {}: {}\n", n.field, n.note);
        }
    }
    if (!p.placements.empty()) {
        Table candidates({"RANK", "CLUSTER", "POOL", "OPTION", "SCORE", "STARTS NOW", "BREAKDOWN"});
        int rank = 1;
        for (const auto& pl : p.placements) {
            candidates.add({std::to_string(rank++), pl.cluster, pl.pool, pl.option_label,
                            fmt::format("{:g}", pl.score), pl.starts_now ? "yes" : "no", breakdown_text(pl)});
        }
        out += "\nCandidates:\n" + candidates.render();
    }
    if (!p.rejections.empty()) {
        Table rejected({"CLUSTER", "POOL", "OPTION", "REASON"});
        for (const auto& r : p.rejections) {
            rejected.add({r.cluster, r.pool.empty() ? "-" : r.pool,
                          r.option_label.empty() ? "-" : r.option_label, r.reason});
        }
        out += "\nRejected:\n" + rejected.render();
    }
    if (v.artifact) {
        out += fmt::format("\nArtifact ({} on {}):\n{}", to_string(p.placements.front().kind),
                           p.placements.front().cluster, *v.artifact);
    }
    return out;
}

// A pipeline or job group: every member planned on the same inventory, on its own, so one group may span
// clusters. The group is placed whole or not at all: exit 2 when any member has nowhere to run.
Result<int> plan_group(Context& ctx, const PlanFlags& flags, const TaskGroup& group) {
    auto inventory = gather_inventory(ctx);
    if (!inventory) {
        return tl::unexpected(inventory.error());
    }
    std::vector<Plan> plans;
    plans.reserve(group.members.size());
    for (const auto& member : group.members) {
        plans.push_back(plan(member, *inventory, ctx.config().planner));
    }
    std::vector<TaskPlanView> views;
    std::vector<std::string> unplaced;
    for (std::size_t i = 0; i < group.members.size(); ++i) {
        auto view = view_of(ctx, group.members[i], plans[i]);
        if (!view) {
            return tl::unexpected(view.error());
        }
        views.push_back(*view);
        if (plans[i].placements.empty()) {
            unplaced.push_back(group.members[i].name);
        }
    }
    if (flags.json) {
        auto members = nlohmann::json::array();
        for (const auto& v : views) {
            members.push_back(plan_json(v));
        }
        auto delays = nlohmann::json::object();
        for (const auto& m : group.members) {
            delays[m.name] = group.termination_delay_of(m.name);
        }
        auto primary = nlohmann::json::array();
        for (const auto& m : group.members) {
            if (group.is_primary(m.name)) {
                primary.push_back(m.name);
            }
        }
        auto ignored = nlohmann::json::array();
        for (const auto& n : group.notes) {
            ignored.push_back({{"field", n.field}, {"reason", n.note}});
        }
        nlohmann::json header{
            {"name", group.name}, {"execution", std::string(to_string(group.kind))}, {"ignored", ignored}};
        if (group.kind == GroupKind::parallel) {
            header["primary"] = primary;
            header["termination_delay_seconds"] = delays;
        }
        print_json({{"group", header}, {"placed", unplaced.empty()}, {"members", members}});
        return unplaced.empty() ? exit_code::ok : exit_code::bad_input;
    }
    std::string out = fmt::format(
        "{} {} ({}): {} task(s){}\n", group.kind == GroupKind::parallel ? "Job group" : "Pipeline",
        group.name, group.source_file, group.members.size(),
        group.kind == GroupKind::parallel ? ", started together" : ", run one after another");
    for (const auto& n : group.notes) {
        out += fmt::format("  {}: {}\n", n.field, n.note);
    }
    Table summary({"TASK", "PRIMARY", "CHOSEN", "NODES", "OPTION"});
    for (std::size_t i = 0; i < group.members.size(); ++i) {
        const auto& m = group.members[i];
        const auto& p = plans[i];
        summary.add(
            {m.name, group.kind == GroupKind::parallel ? (group.is_primary(m.name) ? "yes" : "no") : "-",
             p.placements.empty() ? "none" : p.placements.front().cluster + "/" + p.placements.front().pool,
             std::to_string(m.num_nodes), p.placements.empty() ? "-" : p.placements.front().option_label});
    }
    out += "\n" + summary.render();
    out += unplaced.empty() ? "\nEvery task can be placed.\n"
                            : fmt::format("\nNot placed: {}; the group would submit nothing.\n",
                                          fmt::join(unplaced, ", "));
    for (const auto& v : views) {
        out += "\n== " + v.spec->name + " ==\n" + plan_text(v);
    }
    print_stdout(out);
    return unplaced.empty() ? exit_code::ok : exit_code::bad_input;
}

Result<int> plan_command(Context& ctx, const PlanFlags& flags) {
    auto loaded = app::load_task_or_group(ctx, flags.spec.file, flags.spec.overrides);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    if (loaded->group) {
        return plan_group(ctx, flags, *loaded->group);
    }
    auto planned = plan_loaded_task(ctx, std::move(*loaded->task));
    if (!planned) {
        return tl::unexpected(planned.error());
    }
    auto view = view_of(ctx, planned->spec, planned->plan);
    if (!view) {
        return tl::unexpected(view.error());
    }
    if (flags.json) {
        print_json(plan_json(*view));
    } else {
        print_stdout(plan_text(*view));
    }
    return planned->plan.placements.empty() ? exit_code::bad_input : exit_code::ok;
}

} // namespace

void setup_plan(CLI::App& command, Action& action) {
    auto flags = std::make_shared<PlanFlags>();
    add_spec_flags(command, flags->spec);
    command.add_flag(
        "--json", flags->json,
        "JSON on stdout: {task, chosen, candidates, rejections, ignored, artifact}; for a pipeline "
        "or job group {group, placed, members: [...]}");
    command.footer(
        "A file with several YAML documents is a pipeline or a job group (SkyPilot's formats): each "
        "task is planned on its own.\nExits 0 when a cluster can run the task (every task of a group), 2 "
        "when none can.");
    command.callback(
        [flags, &action] { action = [flags](Context& ctx) { return plan_command(ctx, *flags); }; });
}

} // namespace tandem::cli
