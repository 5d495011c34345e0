// Pipelines and job groups at run time (docs/ARCHITECTURE.md, "Pipelines and job groups"): the group
// runner. What core/job_group.hpp decides, this carries out: publishing the address book once every member
// has started, stopping the other members when the primaries ended or one failed, submitting a
// pipeline's next stage, storing the group's state.

#include "app/group_runner.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "app/fanout.hpp"
#include "app/launch_lock.hpp"
#include "app/planning.hpp"

namespace tandem::app {

bool addresses_published(const JobRecord& group) {
    auto j = nlohmann::json::parse(group.placement_json, nullptr, false);
    return j.is_object() && j.contains("addresses_published_at");
}

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

Result<GroupAddresses*> group_addresses(Session& ctx, const std::string& cluster) {
    return require(ctx, cluster, &Capabilities::group_addresses, Capability::group_addresses);
}

bool has_started(const JobRecord& m) {
    return !m.remote_id.empty() && (m.state == JobState::running || m.state == JobState::starting);
}

// Delivers `book` to every member through its backend.
Status deliver_book(Session& ctx, const GroupHeader& header, const GroupView& view, const std::string& book) {
    for (const auto& member : view.members) {
        const auto& m = member.record;
        auto backend = group_addresses(ctx, m.cluster);
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
    return {};
}

// Each member's recoveries when its addresses were last read: a member whose recoveries changed since may
// run elsewhere now (a requeued Slurm job on other nodes, a replaced pod with a new IP).
nlohmann::json recoveries_seen(const GroupView& view) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& m : view.members) {
        out[m.record.member] = m.record.recoveries;
    }
    return out;
}

Status store_placement(Session& ctx, GroupView& view, const nlohmann::json& placement) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    if (auto ok = (*store)->set_placement_json(view.group.record.id, placement.dump()); !ok) {
        return tl::unexpected(ok.error());
    }
    view.group.record.placement_json = placement.dump();
    return {};
}

// Once every member has started: asks each member's backend for its ranks' addresses and delivers the
// book to every member. Returns whether the book went out.
Result<bool> publish_addresses(Session& ctx, const GroupHeader& header, GroupView& view) {
    for (const auto& m : view.members) {
        if (!has_started(m.record) || m.unreachable) {
            return false;
        }
    }
    std::map<std::string, std::vector<std::string>> hosts;
    for (const auto& m : view.members) {
        auto backend = group_addresses(ctx, m.record.cluster);
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
    if (auto ok = deliver_book(ctx, header, view, address_book(header, hosts)); !ok) {
        return tl::unexpected(ok.error());
    }
    nlohmann::json placement{
        {"addresses_published_at", ctx.now()}, {"hosts", hosts}, {"recoveries", recoveries_seen(view)}};
    if (auto ok = store_placement(ctx, view, placement); !ok) {
        return tl::unexpected(ok.error());
    }
    ctx.progress(fmt::format("job group {} ({}): addresses published to its {} members", view.group.record.id,
                             view.group.record.name, view.members.size()));
    return true;
}

// After the book went out: a member that recovered since (issue 32) is asked for its addresses again once
// it runs, and when they changed, the book goes out again to every member. The recovered member's nodes
// or pods wait for a book that lists them (group_wait_function); the others may read the file again.
Result<bool> republish_moved(Session& ctx, const GroupHeader& header, GroupView& view) {
    auto placement = nlohmann::json::parse(view.group.record.placement_json, nullptr, false);
    if (!placement.is_object()) {
        return false;
    }
    auto hosts = published_hosts(view.group.record);
    nlohmann::json seen = placement.value("recoveries", nlohmann::json::object());
    if (!seen.is_object()) {
        seen = nlohmann::json::object();
    }
    bool looked = false, moved = false;
    std::vector<std::string> movers;
    for (const auto& m : view.members) {
        const auto& r = m.record;
        const auto it = seen.find(r.member);
        if ((it != seen.end() && it->is_string() && *it == r.recoveries) || (it == seen.end() && r.recoveries.empty())) {
            continue;
        }
        if (!has_started(r) || m.unreachable) {
            continue; // back in the queue, or not running again yet: asked at a later look
        }
        auto backend = group_addresses(ctx, r.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        auto h = (*backend)->hosts(r);
        if (!h) {
            return tl::unexpected(h.error());
        }
        if (!*h) {
            continue;
        }
        looked = true;
        seen[r.member] = r.recoveries;
        if (**h != hosts[r.member]) {
            hosts[r.member] = std::move(**h);
            movers.push_back(r.member);
            moved = true;
        }
    }
    if (!looked) {
        return false;
    }
    if (moved) {
        if (auto ok = deliver_book(ctx, header, view, address_book(header, hosts)); !ok) {
            return tl::unexpected(ok.error());
        }
        placement["hosts"] = hosts;
        placement["addresses_republished_at"] = ctx.now();
    }
    placement["recoveries"] = seen;
    if (auto ok = store_placement(ctx, view, placement); !ok) {
        return tl::unexpected(ok.error());
    }
    if (moved) {
        std::string who;
        for (const auto& m : movers) {
            who += (who.empty() ? "" : ", ") + m;
        }
        ctx.progress(fmt::format("job group {} ({}): {} recovered elsewhere: addresses published again to its "
                                 "{} members",
                                 view.group.record.id, view.group.record.name, who, view.members.size()));
    }
    return moved;
}

// Carries out what the group's state calls for and returns the group's state for the caller to store
// (a status of many groups stores them in one transaction). Errors of a backend (publishing, stopping)
// are reported on stderr and retried by the next look; they do not stop the others.
std::optional<JobUpdate> advance(Session& ctx, GroupView& view, const StageSubmitter& submit_stage) {
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
    const bool acts = !header->adopted; // an adopted group is watched, its launch acts
    if (acts && view.members.size() < header->members.size()) {
        // Members missing: their launch is recording them, or died doing so (its lock is free).
        auto gone = take_abandoned_launch(ctx.paths().state_dir, header->token);
        if (!gone) {
            return std::nullopt;
        }
        for (auto& m : view.members) {
            if (auto ok = stop_member(ctx, m.record, "stopped: the group's launch was interrupted"); !ok) {
                ctx.error(fmt::format("job group {}: cannot stop member {} on {}: {}", g.id, m.record.member,
                                      m.record.cluster, ok.error().message));
                return std::nullopt; // tried again at the next look
            }
        }
        return JobUpdate{JobState::failed,
                         fmt::format("launch interrupted after recording {} of its {} members",
                                     view.members.size(), header->members.size()),
                         std::nullopt, std::nullopt, ctx.now()};
    }
    if (acts && header->kind == GroupKind::parallel && !addresses_published(g)) {
        if (auto done = publish_addresses(ctx, *header, view); !done) {
            ctx.error(fmt::format("{}", done.error().message));
        }
    } else if (acts && header->kind == GroupKind::parallel) {
        if (auto done = republish_moved(ctx, *header, view); !done) {
            ctx.error(fmt::format("{}", done.error().message));
        }
    }
    GroupStep step;
    for (int round = 0; round < 3; ++round) {
        std::vector<JobRecord> members;
        for (const auto& m : view.members) {
            members.push_back(m.record);
        }
        step = next_step(*header, members, ctx.now());
        if (!acts) {
            step.stop.clear();
            step.submit.clear();
        }
        bool changed = false;
        for (const auto& [index, reason] : step.stop) {
            auto& m = view.members[index].record;
            if (auto ok = stop_member(ctx, m, reason); !ok) {
                ctx.error(fmt::format("job group {}: cannot stop member {} on {}: {}", g.id, m.member,
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
    if (acts && header->kind == GroupKind::parallel && !addresses_published(g) &&
        !is_terminal(step.group.state) && step.stop.empty()) {
        step.group.reason += "; addresses not published yet";
    }
    if (!step.submit.empty() && !submit_stage) {
        step.group.reason += " (waiting for the launch that follows the pipeline to submit it)";
    }
    if (acts && is_terminal(step.group.state) && addresses_published(g)) {
        // The group has ended: what the addresses left on the clusters goes (best effort; a file left
        // behind is a few hundred bytes in the user's home).
        for (std::size_t i = 0; i < view.members.size(); ++i) {
            const auto& m = view.members[i].record;
            auto backend = group_addresses(ctx, m.cluster);
            if (backend) {
                if (auto ok = (*backend)->unpublish(m, header->channel(member_index(*header, m.member)));
                    !ok) {
                    ctx.progress(fmt::format("job group {}: could not remove member {}'s addresses on {}: {}",
                                             g.id, m.member, m.cluster, ok.error().message));
                }
            }
        }
    }
    return step.group;
}

// Stores the groups' new states in one transaction and reads their rows back.
void store_groups(Session& ctx, std::vector<GroupView*>& views, const std::vector<JobUpdate>& updates) {
    if (views.empty()) {
        return;
    }
    auto store = ctx.store();
    if (!store) {
        ctx.error(fmt::format("{}", store.error().message));
        return;
    }
    std::vector<std::pair<std::int64_t, JobUpdate>> pairs;
    store::JobFilter filter;
    for (std::size_t i = 0; i < views.size(); ++i) {
        pairs.emplace_back(views[i]->group.record.id, updates[i]);
        filter.ids.push_back(views[i]->group.record.id);
    }
    if (auto ok = (*store)->update_many(pairs, ctx.now()); !ok) {
        ctx.error(fmt::format("{}", ok.error().message));
        return;
    }
    auto rows = (*store)->list(filter);
    if (!rows) {
        ctx.error(fmt::format("{}", rows.error().message));
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

Result<std::vector<JobRecord>> members_of(Session& ctx, const std::vector<std::int64_t>& group_ids) {
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

// Stops one member: the backend cancels it (Slurm's scancel and Kubernetes' delete both give the
// processes a TERM first), then its row says why. A member never submitted is only marked.
Status stop_member(Session& ctx, JobRecord& member, const std::string& reason) {
    if (is_terminal(member.state)) {
        return {};
    }
    return cancel_job(ctx, member, reason);
}

RefreshedJobs refresh_with_groups(Session& ctx, std::vector<JobRecord> jobs, bool refresh) {
    RefreshedJobs out;
    std::vector<JobRecord> groups;
    std::vector<JobRecord> flat;
    out.is_group.reserve(jobs.size());
    for (const auto& j : jobs) {
        out.is_group.push_back(j.is_group());
    }
    if (std::find(out.is_group.begin(), out.is_group.end(), true) == out.is_group.end()) {
        flat = std::move(jobs); // no group: the list as it is (2,000 jobs are 2,000 records not moved)
    } else {
        flat.reserve(jobs.size());
        for (auto& j : jobs) {
            (j.is_group() ? groups : flat).push_back(std::move(j));
        }
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
        ctx.error(fmt::format("{}", members.error().message));
    }
    std::vector<JobView> views;
    if (refresh) {
        views = refresh_jobs(ctx, std::move(flat));
    } else {
        views.reserve(flat.size());
        for (auto& j : flat) {
            views.push_back(JobView{std::move(j), false, {}});
        }
    }
    std::map<std::int64_t, std::vector<JobView>> by_group;
    for (std::size_t i = plain_count; i < views.size(); ++i) {
        by_group[*views[i].record.parent_id].push_back(std::move(views[i]));
    }
    views.erase(views.begin() + static_cast<std::ptrdiff_t>(plain_count), views.end());
    out.plain = std::move(views);
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

Result<GroupView> refresh_group(Session& ctx, std::int64_t group_id, const StageSubmitter& submit_stage) {
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

Status cancel_group(Session& ctx, const GroupView& view) {
    Status first_error;
    for (auto m : view.members) {
        if (auto ok = stop_member(ctx, m.record, std::string(k_user_cancel_reason)); !ok && first_error) {
            Error e = ok.error();
            e.message = fmt::format("member {} ({}) on {}: {}", m.record.id, m.record.member,
                                    m.record.cluster, e.message);
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
    const auto now = ctx.now();
    JobUpdate cancelled{JobState::cancelled, std::string(k_user_cancel_reason), std::nullopt, std::nullopt,
                        now};
    return (*store)->update(view.group.record.id, cancelled, now);
}

Result<GroupView> follow_group(Session& ctx, std::int64_t group_id, const StageSubmitter& submit_stage,
                               const std::function<void(const GroupView&)>& each) {
    auto delay = std::chrono::milliseconds(300);
    for (;;) {
        auto view = refresh_group(ctx, group_id, submit_stage);
        if (!view) {
            return view;
        }
        if (each) {
            each(*view);
        }
        if (is_terminal(view->group.record.state)) {
            return view;
        }
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 3 / 2, std::chrono::milliseconds(2000));
    }
}

} // namespace tandem::app
