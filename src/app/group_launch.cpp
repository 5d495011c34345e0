// Launching a pipeline or job group: every member placed first (all or nothing), the group and its
// members recorded, the first members submitted to every cluster at once, then followed by the group
// runner (app/group_runner.hpp) with this process submitting the later stages.

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "app/fanout.hpp"
#include "app/group_runner.hpp"
#include "app/launch_lock.hpp"
#include "app/planning.hpp"

namespace tandem::app {

namespace {

// The first submit of `indexes`: every cluster at once, one thread each (a backend instance serves one
// thread), the members placed on one cluster one after another on its warm connection (measured: faster
// than a fresh connection per member, whose handshakes and caches cost more than the second request).
// Then each member's failover carries on from its answer.
Status submit_concurrently(Session& ctx, std::vector<Failover>& failovers, const std::vector<TaskSpec>& specs,
                           const std::vector<std::size_t>& indexes) {
    using Answers = std::vector<std::optional<Result<std::string>>>;
    auto answers = std::make_shared<Answers>(failovers.size());
    std::map<std::string, std::vector<std::size_t>> by_cluster;
    for (auto i : indexes) {
        by_cluster[failovers[i].placement().cluster].push_back(i);
    }
    struct Work {
        std::size_t index;
        std::int64_t job_id;
        JobIdentity identity;
        TaskSpec spec;
        Placement placement;
    };
    std::vector<FanoutTask> tasks;
    std::vector<std::pair<std::string, std::vector<std::size_t>>> task_members;
    for (const auto& [cluster, members] : by_cluster) {
        auto backend = ctx.backend(cluster);
        if (!backend) {
            for (auto i : members) {
                (*answers)[i] = tl::unexpected(backend.error());
            }
            continue;
        }
        // Copies: a task still running at its deadline is left behind and must own what it reads.
        auto work = std::make_shared<std::vector<Work>>();
        for (auto i : members) {
            work->push_back(Work{i, failovers[i].job().id, identity_of(ctx, failovers[i].job()), specs[i],
                                 failovers[i].placement()});
        }
        tasks.push_back(FanoutTask{[b = *backend, work, answers, fault = ctx.fault_points()] {
                                       for (const auto& w : *work) {
                                           (*answers)[w.index] =
                                               b->submit(w.spec, w.placement, w.job_id, w.identity);
                                           if (fault && (*answers)[w.index]->has_value()) {
                                               fault("group.member-submitted");
                                           }
                                       }
                                   },
                                   ctx.deadline(cluster) * static_cast<int>(members.size())});
        task_members.emplace_back(cluster, members);
    }
    const auto finished = run_fanout(std::move(tasks));
    std::set<std::size_t> left_behind; // their answers are not read: the thread may still write them
    for (std::size_t t = 0; t < finished.size(); ++t) {
        if (!finished[t]) {
            ctx.abandon(task_members[t].first);
            left_behind.insert(task_members[t].second.begin(), task_members[t].second.end());
        }
    }
    Status first_error;
    for (auto i : indexes) {
        std::optional<Result<std::string>> answer;
        if (!left_behind.count(i)) {
            answer = std::move((*answers)[i]);
        }
        if (!answer) {
            answer = fail(ErrorKind::timeout,
                          fmt::format("no answer from {} to the submit", failovers[i].placement().cluster));
        }
        if (auto ok = failovers[i].submit(std::move(answer)); !ok && first_error) {
            first_error = ok;
        }
    }
    return first_error;
}

// Every member placed, or the error naming those no cluster can run.
Result<std::vector<Plan>> plan_members(Session& ctx, const TaskGroup& group) {
    auto inventory = gather_inventory(ctx, std::chrono::seconds(30));
    if (!inventory) {
        return tl::unexpected(inventory.error());
    }
    std::vector<Plan> plans;
    std::string unplaced;
    for (const auto& m : group.members) {
        plans.push_back(plan(m, *inventory, ctx.config().planner));
        if (plans.back().placements.empty()) {
            unplaced += (unplaced.empty() ? "" : ", ") + m.name;
        }
    }
    if (!unplaced.empty()) {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("{}: {} {}: no cluster can run {}; nothing was submitted", group.source_file,
                                group_word(group.kind), group.name, unplaced),
                    fmt::format("`tandem plan {}` shows each task's rejections", group.source_file));
    }
    return plans;
}

// The group's own row: backend "group", its members' clusters.
Result<JobRecord> record_group(Session& ctx, const TaskGroup& group, const GroupHeader& header,
                               const std::vector<Plan>& plans) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    JobRecord row;
    row.name = group.name;
    row.backend = JobRecord::k_group_backend;
    std::set<std::string> clusters;
    for (const auto& p : plans) {
        clusters.insert(p.placements.front().cluster);
    }
    for (const auto& c : clusters) {
        row.cluster += (row.cluster.empty() ? "" : ",") + c;
    }
    row.state = JobState::pending;
    row.submitted_at = ctx.now();
    row.updated_at = row.submitted_at;
    row.spec_json = to_json(header).dump();
    row.placement_json = "{}";
    row.submit_token = header.token; // its members name the group by it on the clusters (identity g=)
    auto id = (*store)->insert(row);
    if (!id) {
        return tl::unexpected(id.error());
    }
    row.id = *id;
    return row;
}

// The group's variables in the member's environment: the task may set TANDEM_GROUP_WAIT itself (how long
// its wrapper waits for the addresses); the group's own names are tandem's.
void add_group_environment(TaskSpec& spec, const GroupHeader& header, std::int64_t group_id) {
    for (auto& kv : group_environment(header, group_id, spec.name, k_default_group_wait)) {
        auto it = std::find_if(spec.envs.begin(), spec.envs.end(),
                               [&](const auto& e) { return e.first == kv.first; });
        if (it == spec.envs.end()) {
            spec.envs.push_back(std::move(kv));
        } else if (kv.first != "TANDEM_GROUP_WAIT") {
            it->second = std::move(kv.second);
        }
    }
}

} // namespace

const char* group_word(GroupKind kind) {
    return kind == GroupKind::pipeline ? "pipeline" : "job group";
}

Result<std::unique_ptr<GroupLaunch>> start_group(Session& ctx, TaskGroup group,
                                                 const std::optional<std::string>& pending_timeout) {
    auto plans = plan_members(ctx, group);
    if (!plans) {
        return tl::unexpected(plans.error());
    }
    auto launch = std::make_unique<GroupLaunch>();
    launch->kind = group.kind;
    launch->name = group.name;
    launch->source_file = group.source_file;
    for (const auto& m : group.members) {
        auto t = pending_timeouts(ctx, pending_timeout, m);
        if (!t) {
            return tl::unexpected(t.error());
        }
        launch->timeouts.push_back(*t);
    }
    const bool pipeline = group.kind == GroupKind::pipeline;
    const GroupHeader header = header_of(group, ctx.new_token().substr(0, 8));
    // The group's own lock (app/launch_lock.hpp), held until every member is recorded: a `status` that
    // can take it knows a group missing members will never get them (advance() settles it FAILED).
    const std::string& state_dir = ctx.paths().state_dir;
    if (auto held = hold_launch_lock(state_dir, header.token); !held) {
        return tl::unexpected(held.error());
    }
    auto row = record_group(ctx, group, header, *plans);
    if (!row) {
        release_launch_lock(state_dir, header.token);
        return tl::unexpected(row.error());
    }
    ctx.fault_point("group.recorded");
    launch->group = *row;
    launch->specs = std::move(group.members);
    auto& specs = launch->specs;
    launch->failovers.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
        add_group_environment(specs[i], header, row->id);
        if (!pipeline) {
            specs[i].group_channel = header.channel(i);
        }
        const std::string reason = pipeline && i > 0
                                       ? fmt::format("waiting for stage {} ({})", i, specs[i - 1].name)
                                       : std::string();
        auto member = record_job(ctx, specs[i], (*plans)[i].placements.front(), row->id, reason);
        if (!member) {
            release_launch_lock(state_dir, header.token);
            return tl::unexpected(member.error());
        }
        ctx.fault_point("group.member-recorded");
        launch->failovers.emplace_back(ctx, specs[i], (*plans)[i].placements, *member);
    }
    release_launch_lock(state_dir, header.token); // each member's own lock covers it from here
    std::vector<std::size_t> first;
    for (std::size_t i = 0; i < (pipeline ? 1 : specs.size()); ++i) {
        first.push_back(i);
    }
    ctx.progress(fmt::format("{} {} ({}): {} task(s), id {}", group_word(group.kind), launch->name,
                             launch->source_file, specs.size(), row->id));
    auto submitted = submit_concurrently(ctx, launch->failovers, specs, first);
    if (!submitted) {
        // The group is placed whole or not at all: what was submitted is cancelled, the group fails.
        ctx.error(submitted.error().message);
        if (auto view = refresh_group(ctx, row->id)) {
            for (auto m : view->members) {
                if (auto ok = stop_member(ctx, m.record, "stopped: another member could not be submitted");
                    !ok) {
                    ctx.error(
                        fmt::format("cannot cancel member {}: {}", m.record.member, ok.error().message));
                }
            }
            if (auto store = ctx.store()) {
                const auto now = ctx.now();
                (void)(*store)->update(row->id,
                                       JobUpdate{JobState::failed,
                                                 "submit failed: " + submitted.error().message, std::nullopt,
                                                 std::nullopt, now},
                                       now);
            }
        }
        Error e = submitted.error();
        e.message =
            fmt::format("{} {} (job {}): {}", group_word(group.kind), launch->name, row->id, e.message);
        return tl::unexpected(e);
    }
    return launch;
}

void GroupLaunch::submit_stage(std::size_t index) {
    if (auto ok = failovers[index].submit(); !ok) {
        failovers[index].session().error(ok.error().message);
    }
}

void GroupLaunch::move_on_if_stuck(const GroupView& view) {
    for (std::size_t i = 0; i < view.members.size() && i < failovers.size(); ++i) {
        const auto limit = timeouts[i].for_backend(view.members[i].record.backend);
        if (limit && !view.members[i].record.remote_id.empty()) {
            if (auto moved = failovers[i].move_on_if_stuck(view.members[i], *limit); !moved) {
                failovers[i].session().error(moved.error().message);
            }
        }
    }
}

Result<GroupView> follow_launch(Session& ctx, GroupLaunch& launch,
                                const std::function<void(const GroupView&)>& each) {
    StageSubmitter submit_stage = [&](std::size_t index) { launch.submit_stage(index); };
    return follow_group(ctx, launch.group.id, submit_stage, [&](const GroupView& view) {
        launch.move_on_if_stuck(view);
        if (each) {
            each(view);
        }
    });
}

} // namespace tandem::app
