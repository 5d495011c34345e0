// Planning: loading and checking a task file against the configuration, asking every configured
// cluster for its inventory at once, and planning (core/planner.hpp).

#include "app/planning.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "app/fanout.hpp"
#include "core/quantity.hpp"

namespace tandem::app {

namespace {

// SkyPilot's git credentials come from the launching machine's environment: GIT_TOKEN (https) and
// GIT_SSH_KEY_PATH (a private key file, for ssh URLs). They travel as the job's secrets GIT_TOKEN and
// GIT_SSH_KEY, unless the task sets those itself.
Status add_git_credentials(Session& ctx, TaskSpec& spec) {
    auto has = [&](std::string_view name) {
        return std::any_of(spec.secrets.begin(), spec.secrets.end(),
                           [&](const auto& kv) { return kv.first == name; });
    };
    const LoadOptions options = ctx.load_options();
    const auto& getenv = options.getenv;
    if (auto token = getenv("GIT_TOKEN"); token && !token->empty() && !has("GIT_TOKEN")) {
        spec.secrets.emplace_back("GIT_TOKEN", *token);
    }
    if (auto path = getenv("GIT_SSH_KEY_PATH"); path && !path->empty() && !has("GIT_SSH_KEY")) {
        std::ifstream in(*path, std::ios::binary);
        std::ostringstream key;
        key << in.rdbuf();
        const std::string text = key.str();
        if (!in || text.find("PRIVATE KEY") == std::string::npos || text.size() > 64 * 1024) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("GIT_SSH_KEY_PATH={}: not a readable private key file", *path),
                        "point GIT_SSH_KEY_PATH at the key that may clone the workdir's repository");
        }
        spec.secrets.emplace_back("GIT_SSH_KEY", text);
    }
    return {};
}

} // namespace

namespace {

// The checks after loading that need the configuration: git credentials, backend support.
Status ready_task(Session& ctx, TaskSpec& spec) {
    if (spec.git_workdir) {
        if (auto ok = add_git_credentials(ctx, spec); !ok) {
            return ok;
        }
    }
    auto unsupported = check_backend_support(spec, ctx.configured_kinds());
    if (!unsupported.empty()) {
        return fail(ErrorKind::invalid_spec, format_diagnostics(unsupported),
                    "no configured cluster can honour this; change the task or add a cluster that can");
    }
    return {};
}

} // namespace

Result<LoadedFile> load_task_or_group(Session& ctx, const std::string& file, const SpecOverrides& overrides) {
    auto loaded = load_task_file(file, overrides, ctx.load_options());
    if (!loaded.diagnostics.empty()) {
        return fail(ErrorKind::invalid_spec, format_diagnostics(loaded.diagnostics));
    }
    LoadedFile out;
    if (loaded.group) {
        for (auto& member : loaded.group->members) {
            if (auto ok = ready_task(ctx, member); !ok) {
                return fail(ok.error().kind, "task " + member.name + ": " + ok.error().message,
                            ok.error().hint);
            }
        }
        out.group = std::move(loaded.group);
    } else {
        if (auto ok = ready_task(ctx, *loaded.task); !ok) {
            return tl::unexpected(ok.error());
        }
        out.task = std::move(loaded.task);
    }
    return out;
}

Result<PlannedTask> plan_loaded_task(Session& ctx, TaskSpec spec, std::chrono::seconds max_age) {
    auto inventory = gather_inventory(ctx, max_age);
    if (!inventory) {
        return tl::unexpected(inventory.error());
    }
    PlannedTask planned{std::move(spec), std::move(*inventory), {}};
    planned.plan = plan(planned.spec, planned.inventory, ctx.config().planner);
    return planned;
}

namespace {

ClusterInventory unreachable(const ClusterConfig& c, const Error& e) {
    ClusterInventory down;
    down.name = c.name;
    down.kind = c.kind;
    down.reachable = false;
    down.error = e.message;
    down.error_kind = e.kind;
    down.error_hint = e.hint;
    return down;
}

} // namespace

Result<Inventory> gather_inventory(Session& ctx, std::chrono::seconds max_age) {
    const auto& clusters = ctx.config().clusters;
    // Backends are made here (a config error is the user's to fix, not an unreachable cluster); then
    // every cluster is asked at once, each on its own thread with its own deadline.
    using Answer = std::shared_ptr<Result<ClusterInventory>>;
    std::vector<Answer> answers;
    std::vector<FanoutTask> tasks;
    for (const auto& c : clusters) {
        auto backend = ctx.backend(c.name);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        auto answer = std::make_shared<Result<ClusterInventory>>(ClusterInventory{});
        tasks.push_back(FanoutTask{[answer, b = *backend, max_age] { *answer = b->inventory(max_age); },
                                   ctx.deadline(c.name)});
        answers.push_back(std::move(answer));
    }
    const auto finished = run_fanout(std::move(tasks));
    Inventory inventory;
    for (std::size_t i = 0; i < clusters.size(); ++i) {
        const auto& c = clusters[i];
        if (!finished[i]) {
            ctx.abandon(c.name);
            const auto waited = std::chrono::duration_cast<std::chrono::seconds>(ctx.deadline(c.name));
            inventory.clusters.push_back(unreachable(
                c, Error{ErrorKind::timeout, fmt::format("no answer within {}s", waited.count()),
                         "check the cluster's address; `timeout_seconds` in its config sets the wait"}));
        } else if (*answers[i]) {
            inventory.clusters.push_back(std::move(**answers[i]));
        } else {
            inventory.clusters.push_back(unreachable(c, answers[i]->error()));
        }
    }
    return inventory;
}

std::string rejection_line(const Rejection& r) {
    std::string where = r.pool.empty() ? r.cluster : r.cluster + "/" + r.pool;
    return r.option_label.empty() ? fmt::format("{}: {}", where, r.reason)
                                  : fmt::format("{} ({}): {}", where, r.option_label, r.reason);
}

Error no_placement_error(const PlannedTask& planned) {
    // When the only clusters that could have run it could not be asked, say that, with its own class
    // (a refused token is exit 4, an unreachable server 5), not "the task does not fit".
    std::vector<const ClusterInventory*> down;
    for (const auto& c : planned.inventory.clusters) {
        if (!c.reachable) {
            down.push_back(&c);
        }
    }
    if (down.size() == 1 && planned.inventory.clusters.size() == 1) {
        return Error{down.front()->error_kind, down.front()->error, down.front()->error_hint};
    }
    std::string message = fmt::format("no configured cluster can run task '{}'", planned.spec.name);
    for (const auto& r : planned.plan.rejections) {
        message += "\n  " + rejection_line(r);
    }
    const bool all_down = !down.empty() && down.size() == planned.inventory.clusters.size();
    const std::string hint = all_down && !down.front()->error_hint.empty()
                                 ? down.front()->error_hint
                                 : "see `tandem plan FILE` and `tandem infra`";
    return Error{all_down ? down.front()->error_kind : ErrorKind::invalid_spec, message, hint};
}

std::string placement_gpus(const TaskSpec& spec, const Placement& placement) {
    auto options = spec.options();
    if (placement.option_index < 0 || static_cast<std::size_t>(placement.option_index) >= options.size()) {
        return {};
    }
    const auto& accs = options[static_cast<std::size_t>(placement.option_index)].resources.accelerators;
    return accs.empty() ? std::string() : format_accelerator(accs.front());
}

nlohmann::json placement_json(const Placement& p) {
    nlohmann::json breakdown = nlohmann::json::object();
    for (const auto& c : p.breakdown) {
        breakdown[c.name] = c.value;
    }
    nlohmann::json j{{"cluster", p.cluster},
                     {"backend", std::string(to_string(p.kind))},
                     {"pool", p.pool},
                     {"option", p.option_label},
                     {"tier", p.tier},
                     {"score", p.score},
                     {"starts_now", p.starts_now},
                     {"breakdown", breakdown}};
    if (!p.ignored.empty()) {
        j["ignored"] = p.ignored;
    }
    return j;
}

} // namespace tandem::app
