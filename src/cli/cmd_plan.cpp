// `tandem plan FILE`: the dry run. Shows the chosen placement, every candidate with its score broken
// down, every rejected pool with its reason, and the native artifact the winner would receive.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/task_planning.hpp"
#include "core/quantity.hpp"

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

Result<int> plan_command(Context& ctx, const PlanFlags& flags) {
    auto planned = plan_task(ctx, flags.spec);
    if (!planned) {
        return tl::unexpected(planned.error());
    }
    const Plan& p = planned->plan;
    std::optional<std::string> artifact;
    if (!p.placements.empty()) {
        auto backend = ctx.backend(p.placements.front().cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        auto rendered = (*backend)->render(planned->spec, p.placements.front(), 0);
        if (!rendered) {
            return tl::unexpected(rendered.error());
        }
        artifact = *rendered;
    }
    if (flags.json) {
        auto candidates = nlohmann::json::array();
        for (const auto& pl : p.placements) {
            candidates.push_back(placement_json(pl));
        }
        auto rejections = nlohmann::json::array();
        for (const auto& r : p.rejections) {
            rejections.push_back(
                {{"cluster", r.cluster}, {"pool", r.pool}, {"option", r.option_label}, {"reason", r.reason}});
        }
        print_json({{"task", to_redacted_json(planned->spec)},
                    {"chosen",
                     p.placements.empty() ? nlohmann::json(nullptr) : placement_json(p.placements.front())},
                    {"candidates", candidates},
                    {"rejections", rejections},
                    {"ignored", notes_json(planned->spec)},
                    {"artifact", artifact ? nlohmann::json(*artifact) : nlohmann::json(nullptr)}});
        return p.placements.empty() ? exit_code::bad_input : exit_code::ok;
    }
    std::string out =
        fmt::format("Task {} ({}): {} node(s), {} option(s)\n", planned->spec.name, planned->spec.source_file,
                    planned->spec.num_nodes, planned->spec.options().size());
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
    if (!planned->spec.notes.empty()) {
        out += "\nIgnored everywhere:\n";
        for (const auto& n : planned->spec.notes) {
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
    if (artifact) {
        out += fmt::format("\nArtifact ({} on {}):\n{}", to_string(p.placements.front().kind),
                           p.placements.front().cluster, *artifact);
    }
    print_stdout(out);
    return p.placements.empty() ? exit_code::bad_input : exit_code::ok;
}

} // namespace

void setup_plan(CLI::App& command, Action& action) {
    auto flags = std::make_shared<PlanFlags>();
    add_spec_flags(command, flags->spec);
    command.add_flag("--json", flags->json,
                     "JSON on stdout: {task, chosen, candidates, rejections, artifact}");
    command.footer("Exits 0 when a cluster can run the task, 2 when none can.");
    command.callback(
        [flags, &action] { action = [flags](Context& ctx) { return plan_command(ctx, *flags); }; });
}

} // namespace tandem::cli
