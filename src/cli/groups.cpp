#include "cli/groups.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/failover.hpp"
#include "cli/fanout.hpp"
#include "cli/launch_lock.hpp"
#include "cli/output.hpp"
#include "cli/task_planning.hpp"

namespace tandem::cli {

namespace {

constexpr std::int64_t k_default_group_wait = 600; // what a member waits for the addresses, seconds

bool published(const JobRecord& group) {
    auto j = nlohmann::json::parse(group.placement_json, nullptr, false);
    return j.is_object() && j.contains("addresses_published_at");
}

} // namespace

std::map<std::string, std::vector<std::string>> published_hosts(const JobRecord& group) {
    std::map<std::string, std::vector<std::string>> out;
    auto j = nlohmann::json::parse(group.placement_json, nullptr, false);
    if (!j.is_object() || !j.contains("hosts") || !j["hosts"].is_object()) {
        return out;
    }
    for (auto it = j["hosts"].begin(); it != j["hosts"].end(); ++it) {
        if (!it.value().is_array()) {
            continue;
        }
        for (const auto& h : it.value()) {
            if (h.is_string()) {
                out[it.key()].push_back(h.get<std::string>());
            }
        }
    }
    return out;
}

namespace {

// The member's place in the file: its channel's number.
std::size_t member_index(const GroupHeader& header, const std::string& member) {
    return static_cast<std::size_t>(std::find(header.members.begin(), header.members.end(), member) -
                                    header.members.begin());
}

bool has_started(const JobRecord& m) {
    return !m.remote_id.empty() && (m.state == JobState::running || m.state == JobState::starting);
}

// Stops one member: the backend cancels it (Slurm's scancel and Kubernetes' delete both give the
// processes a TERM first), then its row says why. A member never submitted is only marked.
Status stop_member(Context& ctx, JobRecord& member, const std::string& reason) {
    if (is_terminal(member.state)) {
        return {};
    }
    if (!member.remote_id.empty()) {
        auto backend = ctx.backend(member.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        if (auto ok = (*backend)->cancel(member); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    const auto now = now_seconds();
    JobUpdate stopped{JobState::cancelled, reason, std::nullopt, std::nullopt, now};
    if (auto ok = (*store)->update(member.id, stopped, now); !ok) {
        return ok;
    }
    member.state = JobState::cancelled;
    member.reason = reason;
    member.ended_at = now;
    return {};
}

// Once every member has started: asks each member's backend for its ranks' addresses and delivers the
// book to every member. Returns whether the book went out.
Result<bool> publish_addresses(Context& ctx, const GroupHeader& header, GroupView& view) {
    for (const auto& m : view.members) {
        if (!has_started(m.record) || m.unreachable) {
            return false;
        }
    }
    std::map<std::string, std::vector<std::string>> hosts;
    for (const auto& m : view.members) {
        auto backend = ctx.backend(m.record.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        auto h = (*backend)->hosts(m.record);
        if (!h) {
            return tl::unexpected(h.error());
        }
        if (!*h) {
            return false; // a rank without its address yet
        }
        hosts[m.record.member] = std::move(**h);
    }
    const std::string book = address_book(header, hosts);
    for (std::size_t i = 0; i < view.members.size(); ++i) {
        const auto& m = view.members[i].record;
        auto backend = ctx.backend(m.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        if (auto ok = (*backend)->publish(m, header.channel(member_index(header, m.member)), book); !ok) {
            Error e = ok.error();
            e.message = fmt::format("job group {}: cannot deliver the addresses to member {}: {}",
                                    view.group.record.id, m.member, e.message);
            return tl::unexpected(e);
        }
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    nlohmann::json placement{{"addresses_published_at", now_seconds()}, {"hosts", hosts}};
    if (auto ok = (*store)->set_placement_json(view.group.record.id, placement.dump()); !ok) {
        return tl::unexpected(ok.error());
    }
    view.group.record.placement_json = placement.dump();
    note(fmt::format("tandem: job group {} ({}): addresses published to its {} members", view.group.record.id,
                     view.group.record.name, view.members.size()));
    return true;
}

// Carries out what the group's state calls for and returns the group's state for the caller to store
// (a status of many groups stores them in one transaction). Errors of a backend (publishing, stopping)
// are reported on stderr and retried by the next look; they do not stop the others.
std::optional<JobUpdate> advance(Context& ctx, GroupView& view, const StageSubmitter& submit_stage) {
    JobRecord& g = view.group.record;
    if (is_terminal(g.state)) {
        return std::nullopt;
    }
    auto header = group_header_from_json(g.spec_json);
    if (!header) {
        view.group.unreachable = true;
        view.group.unreachable_reason = header.error().message;
        return std::nullopt;
    }
    if (header->kind == GroupKind::parallel && !published(g)) {
        if (auto done = publish_addresses(ctx, *header, view); !done) {
            note(fmt::format("tandem: error: {}", done.error().message));
        }
    }
    GroupStep step;
    for (int round = 0; round < 3; ++round) {
        std::vector<JobRecord> members;
        for (const auto& m : view.members) {
            members.push_back(m.record);
        }
        step = next_step(*header, members, now_seconds());
        bool changed = false;
        for (const auto& [index, reason] : step.stop) {
            auto& m = view.members[index].record;
            if (auto ok = stop_member(ctx, m, reason); !ok) {
                note(fmt::format("tandem: error: job group {}: cannot stop member {} on {}: {}", g.id, m.member,
                                 m.cluster, ok.error().message));
            } else {
                changed = true;
            }
        }
        if (!step.submit.empty() && submit_stage) {
            for (auto index : step.submit) {
                submit_stage(index);
                if (auto store = ctx.store()) {
                    if (auto fresh = (*store)->get(view.members[index].record.id); fresh && *fresh) {
                        view.members[index].record = **fresh;
                    }
                }
            }
            changed = true;
        }
        if (!changed) {
            break;
        }
    }
    if (header->kind == GroupKind::parallel && !published(g) && !is_terminal(step.group.state) &&
        step.stop.empty()) {
        step.group.reason += "; addresses not published yet";
    }
    if (!step.submit.empty() && !submit_stage) {
        step.group.reason += " (waiting for the launch that follows the pipeline to submit it)";
    }
    if (is_terminal(step.group.state) && published(g)) {
        // The group has ended: what the addresses left on the clusters goes (best effort; a file left
        // behind is a few hundred bytes in the user's home).
        for (std::size_t i = 0; i < view.members.size(); ++i) {
            const auto& m = view.members[i].record;
            auto backend = ctx.backend(m.cluster);
            if (backend) {
                if (auto ok = (*backend)->unpublish(m, header->channel(member_index(*header, m.member))); !ok) {
                    note(fmt::format("tandem: job group {}: could not remove member {}'s addresses on {}: {}", g.id,
                                     m.member, m.cluster, ok.error().message));
                }
            }
        }
    }
    return step.group;
}

// Stores the groups' new states in one transaction and reads their rows back.
void store_groups(Context& ctx, std::vector<GroupView*>& views, const std::vector<JobUpdate>& updates) {
    if (views.empty()) {
        return;
    }
    auto store = ctx.store();
    if (!store) {
        note(fmt::format("tandem: error: {}", store.error().message));
        return;
    }
    std::vector<std::pair<std::int64_t, JobUpdate>> pairs;
    store::JobFilter filter;
    for (std::size_t i = 0; i < views.size(); ++i) {
        pairs.emplace_back(views[i]->group.record.id, updates[i]);
        filter.ids.push_back(views[i]->group.record.id);
    }
    if (auto ok = (*store)->update_many(pairs, now_seconds()); !ok) {
        note(fmt::format("tandem: error: {}", ok.error().message));
        return;
    }
    auto rows = (*store)->list(filter);
    if (!rows) {
        note(fmt::format("tandem: error: {}", rows.error().message));
        return;
    }
    std::map<std::int64_t, JobRecord*> by_id;
    for (auto& r : *rows) {
        by_id[r.id] = &r;
    }
    for (auto* v : views) {
        if (auto it = by_id.find(v->group.record.id); it != by_id.end()) {
            v->group.record = std::move(*it->second);
        }
    }
}

Result<std::vector<JobRecord>> members_of(Context& ctx, const std::vector<std::int64_t>& group_ids) {
    if (group_ids.empty()) {
        return std::vector<JobRecord>{};
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    store::JobFilter filter;
    filter.parent_ids = group_ids;
    return (*store)->list(filter);
}

} // namespace

RefreshedJobs refresh_with_groups(Context& ctx, std::vector<JobRecord> jobs, bool refresh) {
    RefreshedJobs out;
    std::vector<JobRecord> groups;
    std::vector<JobRecord> flat;
    std::set<std::int64_t> listed;
    for (auto& j : jobs) {
        out.is_group.push_back(j.is_group());
        listed.insert(j.id);
        (j.is_group() ? groups : flat).push_back(std::move(j));
    }
    std::vector<std::int64_t> ids;
    for (const auto& g : groups) {
        ids.push_back(g.id);
    }
    const std::size_t plain_count = flat.size();
    auto members = members_of(ctx, ids);
    if (members) {
        for (auto& m : *members) {
            flat.push_back(std::move(m)); // a member also listed on its own is refreshed twice: harmless
        }
    } else {
        note(fmt::format("tandem: error: {}", members.error().message));
    }
    std::vector<JobView> views;
    if (refresh) {
        views = refresh_jobs(ctx, std::move(flat));
    } else {
        for (auto& j : flat) {
            views.push_back(JobView{std::move(j), false, {}});
        }
    }
    out.plain.assign(views.begin(), views.begin() + static_cast<std::ptrdiff_t>(plain_count));
    std::map<std::int64_t, std::vector<JobView>> by_group;
    for (std::size_t i = plain_count; i < views.size(); ++i) {
        by_group[*views[i].record.parent_id].push_back(std::move(views[i]));
    }
    for (auto& g : groups) {
        const auto id = g.id;
        out.groups.push_back(GroupView{JobView{std::move(g), false, {}}, std::move(by_group[id])});
    }
    if (refresh) {
        std::vector<GroupView*> changed;
        std::vector<JobUpdate> updates;
        for (auto& gv : out.groups) {
            if (auto u = advance(ctx, gv, {})) {
                changed.push_back(&gv);
                updates.push_back(std::move(*u));
            }
        }
        store_groups(ctx, changed, updates);
    }
    return out;
}

Result<GroupView> refresh_group(Context& ctx, std::int64_t group_id, const StageSubmitter& submit_stage) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    auto group = (*store)->get(group_id);
    if (!group) {
        return tl::unexpected(group.error());
    }
    if (!*group || !(*group)->is_group()) {
        return fail(ErrorKind::not_found, fmt::format("job {} is not a job group", group_id));
    }
    auto members = members_of(ctx, {group_id});
    if (!members) {
        return tl::unexpected(members.error());
    }
    GroupView view{JobView{std::move(**group), false, {}}, refresh_jobs(ctx, std::move(*members))};
    if (auto u = advance(ctx, view, submit_stage)) {
        std::vector<GroupView*> one{&view};
        store_groups(ctx, one, {*u});
    }
    return view;
}

Status cancel_group(Context& ctx, const GroupView& view) {
    Status first_error;
    for (auto m : view.members) {
        if (auto ok = stop_member(ctx, m.record, std::string(k_user_cancel_reason)); !ok && first_error) {
            Error e = ok.error();
            e.message = fmt::format("member {} ({}) on {}: {}", m.record.id, m.record.member, m.record.cluster,
                                    e.message);
            first_error = tl::unexpected(e);
        }
    }
    if (!first_error) {
        return first_error;
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    const auto now = now_seconds();
    JobUpdate cancelled{JobState::cancelled, std::string(k_user_cancel_reason), std::nullopt, std::nullopt, now};
    return (*store)->update(view.group.record.id, cancelled, now);
}

nlohmann::json group_json(const GroupView& view) {
    nlohmann::json j = job_json(view.group.record, view.group.unreachable, view.group.unreachable_reason);
    auto header = group_header_from_json(view.group.record.spec_json);
    j["kind"] = "group";
    if (header) {
        j["execution"] = std::string(to_string(header->kind));
        j["primary_tasks"] = header->primary;
    }
    j["addresses_published"] = published(view.group.record);
    auto members = nlohmann::json::array();
    const auto hosts = published_hosts(view.group.record);
    for (const auto& m : view.members) {
        auto mj = job_json(m.record, m.unreachable, m.unreachable_reason);
        mj["member"] = m.record.member;
        if (auto it = hosts.find(m.record.member); it != hosts.end()) {
            mj["hosts"] = it->second; // its ranks' addresses, as published
        }
        if (header) {
            mj["primary"] = header->kind == GroupKind::parallel && header->is_primary(m.record.member);
        }
        members.push_back(std::move(mj));
    }
    j["members"] = std::move(members);
    return j;
}

std::string group_summary(const GroupView& view) {
    const auto& r = view.group.record;
    std::string text = fmt::format("job group {} ({}) {}", r.id, r.name,
                                   view.group.unreachable ? "UNKNOWN" : std::string(to_string(r.state)));
    if (!r.reason.empty()) {
        text += ": " + r.reason;
    }
    return text;
}

// ---- logs ------------------------------------------------------------------------------------------

namespace {

std::mutex g_print_mutex; // one stdout for every member's follower

// Turns one member's output into "[member/rank] line": a multi-node member's lines arrive as
// "[rank K] text"; a one-node member's as they are.
class MemberLines {
public:
    MemberLines(std::string member, int num_nodes, std::optional<int> node)
        : m_member(std::move(member)), m_multi(num_nodes > 1), m_node(node) {}

    bool feed(std::string_view chunk) {
        m_partial.append(chunk);
        std::string out;
        std::size_t start = 0;
        for (std::size_t nl; (nl = m_partial.find('\n', start)) != std::string::npos; start = nl + 1) {
            out += line(std::string_view(m_partial).substr(start, nl - start));
        }
        m_partial.erase(0, start);
        if (!out.empty()) {
            std::lock_guard<std::mutex> lock(g_print_mutex);
            print_stdout(out);
        }
        return true;
    }
    void finish() {
        if (!m_partial.empty()) {
            std::string out = line(m_partial);
            m_partial.clear();
            std::lock_guard<std::mutex> lock(g_print_mutex);
            print_stdout(out);
        }
    }

private:
    std::string line(std::string_view text) const {
        if (m_node) {
            return fmt::format("[{}/{}] {}\n", m_member, *m_node, text);
        }
        if (!m_multi) {
            return fmt::format("[{}/0] {}\n", m_member, text);
        }
        constexpr std::string_view rank = "[rank ";
        if (text.substr(0, rank.size()) == rank) {
            const auto close = text.find("] ");
            if (close != std::string_view::npos) {
                return fmt::format("[{}/{}] {}\n", m_member, text.substr(rank.size(), close - rank.size()),
                                   text.substr(close + 2));
            }
        }
        return fmt::format("[{}] {}\n", m_member, text);
    }

    std::string m_member;
    bool m_multi;
    std::optional<int> m_node;
    std::string m_partial;
};

bool selected(const JobRecord& m, const GroupLogOptions& options) {
    return !options.member || m.member == *options.member;
}

// Follows members' output on threads of their own, each with a backend of its own (a backend serves one
// thread); started as members get their remote ids.
class Followers {
public:
    Followers(Context& ctx, GroupLogOptions options) : m_ctx(ctx), m_options(std::move(options)) {}
    ~Followers() {
        for (auto& t : m_threads) {
            t.join();
        }
    }

    void start_new(const GroupView& view) {
        for (const auto& m : view.members) {
            const auto& r = m.record;
            // Keyed by the remote id too: a member that moved (failover) is followed where it went.
            if (r.remote_id.empty() || m_started.count({r.id, r.remote_id}) || !selected(r, m_options) ||
                (m_options.node && *m_options.node >= r.num_nodes)) {
                continue;
            }
            auto backend = m_ctx.backend(r.cluster);
            if (!backend) {
                continue;
            }
            m_ctx.abandon(r.cluster); // this thread keeps it; the next backend(cluster) makes another
            m_started.insert({r.id, r.remote_id});
            LogOptions o{true, m_options.tail, m_options.node};
            m_threads.emplace_back([b = *backend, r, o] {
                MemberLines lines(r.member, r.num_nodes, o.node);
                auto ok = b->logs(r, o, [&](std::string_view chunk) { return lines.feed(chunk); });
                lines.finish();
                if (!ok) {
                    note(fmt::format("tandem: cannot follow the output of member {}: {}", r.member,
                                     ok.error().message));
                }
            });
        }
    }

private:
    Context& m_ctx;
    GroupLogOptions m_options;
    std::set<std::pair<std::int64_t, std::string>> m_started;
    std::vector<std::thread> m_threads;
};

// Follows the group until it has ended: refreshes and advances it (publishing, stopping, next stages),
// and with `followers`, streams each member's output as it starts.
Result<GroupView> follow_group(Context& ctx, std::int64_t group_id, Followers* followers,
                               const StageSubmitter& submit_stage,
                               const std::function<void(const GroupView&)>& each = {}) {
    auto delay = std::chrono::milliseconds(300);
    for (;;) {
        auto view = refresh_group(ctx, group_id, submit_stage);
        if (!view) {
            return view;
        }
        if (each) {
            each(*view);
        }
        if (followers) {
            followers->start_new(*view);
        }
        if (is_terminal(view->group.record.state)) {
            return view;
        }
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 3 / 2, std::chrono::milliseconds(2000));
    }
}

} // namespace

Result<GroupView> group_logs(Context& ctx, std::int64_t group_id, const GroupLogOptions& options,
                             const StageSubmitter& submit_stage) {
    if (options.follow) {
        std::optional<Followers> followers(std::in_place, ctx, options);
        auto view = follow_group(ctx, group_id, &*followers, submit_stage);
        followers.reset(); // every member has ended: their followers finish their output
        return view;
    }
    auto view = refresh_group(ctx, group_id, submit_stage);
    if (!view) {
        return view;
    }
    for (const auto& m : view->members) {
        const auto& r = m.record;
        if (r.remote_id.empty() || !selected(r, options) || (options.node && *options.node >= r.num_nodes)) {
            continue;
        }
        auto backend = ctx.backend(r.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        MemberLines lines(r.member, r.num_nodes, options.node);
        auto ok = (*backend)->logs(r, LogOptions{false, options.tail, options.node},
                                   [&](std::string_view chunk) { return lines.feed(chunk); });
        lines.finish();
        if (!ok) {
            note(fmt::format("tandem: error: member {} on {}: {}", r.member, r.cluster, ok.error().message));
        }
    }
    return view;
}

// ---- launch ----------------------------------------------------------------------------------------

namespace {

std::string random_token() {
    std::random_device rd;
    return fmt::format("{:08x}", rd());
}

Result<JobRecord> record_member(const std::string& state_dir, store::JobStore& store, const TaskSpec& spec,
                                const Placement& placement, std::int64_t parent, const std::string& reason) {
    JobRecord job;
    job.name = spec.name;
    job.member = spec.name;
    job.parent_id = parent;
    job.cluster = placement.cluster;
    job.backend = std::string(to_string(placement.kind));
    job.state = JobState::pending;
    job.reason = reason;
    job.submitted_at = now_seconds();
    job.updated_at = job.submitted_at;
    job.spec_json = to_redacted_json(spec).dump();
    job.placement_json = placement_json(placement).dump();
    job.gpus = placement_gpus(spec, placement);
    job.num_nodes = spec.num_nodes;
    job.submit_token = new_submit_token(); // locked first, as launch does (launch_lock.hpp)
    if (auto held = hold_launch_lock(state_dir, job.submit_token); !held) {
        return tl::unexpected(held.error());
    }
    auto id = store.insert(job);
    if (!id) {
        release_launch_lock(state_dir, job.submit_token);
        return tl::unexpected(id.error());
    }
    job.id = *id;
    return job;
}

// The first submit of `indexes`: every cluster at once, one thread each (a backend instance serves one
// thread), the members placed on one cluster one after another on its warm connection (measured: faster
// than a fresh connection per member, whose handshakes and caches cost more than the second request).
// Then each member's failover carries on from its answer.
Status submit_concurrently(Context& ctx, std::vector<Failover>& failovers, const std::vector<TaskSpec>& specs,
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
        std::string token;
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
            work->push_back(Work{i, failovers[i].job().id, failovers[i].job().submit_token, specs[i],
                                 failovers[i].placement()});
        }
        tasks.push_back(FanoutTask{[b = *backend, work, answers] {
                                       for (const auto& w : *work) {
                                           (*answers)[w.index] = b->submit(w.spec, w.placement, w.job_id, w.token);
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
            answer = fail(ErrorKind::timeout, fmt::format("no answer from {} to the submit",
                                                          failovers[i].placement().cluster));
        }
        if (auto ok = failovers[i].submit(std::move(answer)); !ok && first_error) {
            first_error = ok;
        }
    }
    return first_error;
}

} // namespace

Result<int> launch_group(Context& ctx, TaskGroup group, const GroupLaunchOptions& options) {
    const bool pipeline = group.kind == GroupKind::pipeline;
    if (pipeline && options.detach && group.members.size() > 1) {
        return fail(ErrorKind::usage,
                    fmt::format("{}: a pipeline's later stages are submitted by `launch` as it follows the "
                                "pipeline, and --detach would leave nothing to submit them",
                                group.source_file),
                    "drop --detach (--wait follows without the output); secrets are never stored, so no later "
                    "command could submit a stage that needs them");
    }
    auto inventory = gather_inventory(ctx, std::chrono::seconds(30));
    if (!inventory) {
        return tl::unexpected(inventory.error());
    }
    std::vector<Plan> plans;
    std::vector<std::string> unplaced;
    for (const auto& m : group.members) {
        plans.push_back(plan(m, *inventory, ctx.config().planner));
        if (plans.back().placements.empty()) {
            unplaced.push_back(m.name);
        }
    }
    const char* kind = pipeline ? "pipeline" : "job group";
    if (!unplaced.empty()) {
        std::string names;
        for (const auto& n : unplaced) {
            names += (names.empty() ? "" : ", ") + n;
        }
        return fail(ErrorKind::invalid_spec,
                    fmt::format("{}: {} {}: no cluster can run {}; nothing was submitted", group.source_file, kind,
                                group.name, names),
                    fmt::format("`tandem plan {}` shows each task's rejections", group.source_file));
    }
    std::vector<PendingTimeouts> timeouts;
    for (const auto& m : group.members) {
        auto t = pending_timeouts(ctx, options.pending_timeout, m);
        if (!t) {
            return tl::unexpected(t.error());
        }
        timeouts.push_back(*t);
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    const GroupHeader header = header_of(group, random_token());
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
    row.submitted_at = now_seconds();
    row.updated_at = row.submitted_at;
    row.spec_json = to_json(header).dump();
    row.placement_json = "{}";
    auto group_id = (*store)->insert(row);
    if (!group_id) {
        return tl::unexpected(group_id.error());
    }
    row.id = *group_id;

    std::vector<TaskSpec> specs = std::move(group.members);
    std::vector<Failover> failovers;
    failovers.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
        auto& spec = specs[i];
        // The task may set TANDEM_GROUP_WAIT itself (how long its wrapper waits for the addresses);
        // the group's own names are tandem's.
        for (auto& kv : group_environment(header, row.id, spec.name, k_default_group_wait)) {
            auto it = std::find_if(spec.envs.begin(), spec.envs.end(),
                                   [&](const auto& e) { return e.first == kv.first; });
            if (it == spec.envs.end()) {
                spec.envs.push_back(std::move(kv));
            } else if (kv.first != "TANDEM_GROUP_WAIT") {
                it->second = std::move(kv.second);
            }
        }
        if (!pipeline) {
            spec.group_channel = header.channel(i);
        }
        const std::string reason =
            pipeline && i > 0 ? fmt::format("waiting for stage {} ({})", i, specs[i - 1].name) : std::string();
        auto member = record_member(ctx.paths().state_dir, **store, spec, plans[i].placements.front(), row.id, reason);
        if (!member) {
            return tl::unexpected(member.error());
        }
        failovers.emplace_back(ctx, specs[i], plans[i].placements, *member);
    }
    std::vector<std::size_t> first;
    for (std::size_t i = 0; i < (pipeline ? 1 : specs.size()); ++i) {
        first.push_back(i);
    }
    note(fmt::format("tandem: {} {} ({}): {} task(s), id {}", kind, group.name, group.source_file, specs.size(),
                     row.id));
    auto submitted = submit_concurrently(ctx, failovers, specs, first);
    if (!submitted) {
        // The group is placed whole or not at all: what was submitted is cancelled, the group fails.
        note(fmt::format("tandem: error: {}", submitted.error().message));
        auto view = refresh_group(ctx, row.id);
        if (view) {
            for (auto m : view->members) {
                if (auto ok = stop_member(ctx, m.record, "stopped: another member could not be submitted"); !ok) {
                    note(fmt::format("tandem: error: cannot cancel member {}: {}", m.record.member,
                                     ok.error().message));
                }
            }
            const auto now = now_seconds();
            (void)(*store)->update(row.id,
                                   JobUpdate{JobState::failed, "submit failed: " + submitted.error().message,
                                             std::nullopt, std::nullopt, now},
                                   now);
        }
        Error e = submitted.error();
        e.message = fmt::format("{} {} (job {}): {}", kind, group.name, row.id, e.message);
        return tl::unexpected(e);
    }
    StageSubmitter submit_stage = [&](std::size_t index) {
        if (auto ok = failovers[index].submit(); !ok) {
            note(fmt::format("tandem: error: {}", ok.error().message));
        }
    };
    if (options.detach) {
        if (!pipeline) {
            note(fmt::format("tandem: the members wait up to {} for each other's addresses; with --detach they "
                             "are published by `tandem status {}` or `tandem logs {}` once every member has "
                             "started",
                             human_duration(k_default_group_wait), row.id, row.id));
        }
        auto view = refresh_with_groups(ctx, {row}, false);
        options.json ? print_json(group_json(view.groups.front()))
                     : print_stdout(fmt::format("{}\n", row.id));
        return exit_code::ok;
    }
    // Follow: refresh and advance the group (publishing, stopping, pending timeouts, next stages).
    StageSubmitter advance_stage = [&](std::size_t index) {
        submit_stage(index);
    };
    auto moved_on = [&](const GroupView& view) {
        for (std::size_t i = 0; i < view.members.size() && i < failovers.size(); ++i) {
            const auto limit = timeouts[i].for_backend(view.members[i].record.backend);
            if (limit && !view.members[i].record.remote_id.empty()) {
                if (auto moved = failovers[i].move_on_if_stuck(view.members[i], *limit); !moved) {
                    note(fmt::format("tandem: error: {}", moved.error().message));
                }
            }
        }
    };
    std::optional<Followers> followers;
    if (!options.wait && !options.json) {
        note("tandem: following its output; Ctrl-C stops following, the group keeps running");
        followers.emplace(ctx, GroupLogOptions{true, std::nullopt, std::nullopt, {}});
    }
    auto done = follow_group(ctx, row.id, followers ? &*followers : nullptr, advance_stage, moved_on);
    followers.reset(); // every member has ended: their followers finish their output
    if (!done) {
        return tl::unexpected(done.error());
    }
    note("tandem: " + group_summary(*done));
    if (options.json) {
        print_json(group_json(*done));
    }
    return job_exit_code(done->group);
}

} // namespace tandem::cli
