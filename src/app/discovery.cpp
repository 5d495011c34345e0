#include "app/discovery.hpp"

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "app/fanout.hpp"
#include "core/job_group.hpp"

namespace tandem::app {

namespace {

struct ClusterAsk {
    std::string cluster;
    BackendKind kind = BackendKind::local;
    Discovery* discovery = nullptr;
    Result<Discovered> answer = tl::unexpected(Error{ErrorKind::internal, "not asked", ""});
};

// What the store keeps of an adopted job: the identity's words, never a spec (it stays on the machine
// that launched it).
std::string adopted_spec(const FoundJob& f) {
    const JobIdentity& id = f.identity;
    nlohmann::json adopted = {{"launched_by", id.user}, {"host", id.host}, {"digest", id.digest},
                              {"tandem", id.version}};
    if (id.element) {
        adopted["element"] = *id.element;
    }
    return nlohmann::json{{"name", id.group.empty() ? id.name : id.member}, {"adopted", adopted}}.dump();
}

JobRecord adopted_record(const ClusterAsk& ask, const FoundJob& f, std::int64_t now) {
    JobRecord r;
    r.name = f.identity.group.empty() ? f.identity.name : f.identity.member;
    if (r.name.empty()) {
        r.name = f.identity.token;
    }
    r.member = f.identity.group.empty() ? std::string() : f.identity.member;
    r.cluster = ask.cluster;
    r.backend = std::string(to_string(ask.kind));
    r.remote_id = f.remote_id;
    // UNKNOWN is never stored: a job whose state the list did not tell is PENDING until the refresh.
    r.state = f.update.state == JobState::unknown ? JobState::pending : f.update.state;
    r.reason = f.update.reason;
    r.exit_code = f.update.exit_code;
    r.started_at = f.update.started_at;
    r.ended_at = f.update.ended_at;
    r.recoveries = f.update.recoveries.value_or("");
    r.submitted_at = f.submitted_at > 0 ? f.submitted_at : now;
    r.updated_at = now;
    r.spec_json = adopted_spec(f);
    r.placement_json = "{}";
    r.num_nodes = f.num_nodes;
    r.submit_token = f.identity.token;
    return r;
}

} // namespace

std::string owner_key(const std::string& cluster, const std::string& remote_id) {
    return cluster + '\x1f' + remote_id;
}

DiscoveryReport discover_jobs(Session& ctx, bool all_users, const std::optional<std::string>& only) {
    DiscoveryReport report;
    std::vector<std::shared_ptr<ClusterAsk>> asks;
    std::vector<FanoutTask> tasks;
    for (const auto& c : ctx.config().clusters) {
        if (c.found || !c.discover_jobs || (only && c.name != *only)) {
            continue;
        }
        auto backend = ctx.backend(c.name);
        if (!backend) {
            report.problems.push_back(fmt::format("{}: {}", c.name, backend.error().message));
            continue;
        }
        Discovery* discovery = (*backend)->capabilities().discovery;
        if (discovery == nullptr) {
            continue; // the local machine: its jobs are this store's
        }
        auto ask = std::make_shared<ClusterAsk>();
        ask->cluster = c.name;
        ask->kind = c.kind;
        ask->discovery = discovery;
        tasks.push_back(FanoutTask{[ask, all_users] { ask->answer = ask->discovery->discover(all_users); },
                                   ctx.deadline(c.name)});
        asks.push_back(std::move(ask));
    }
    const auto finished = run_fanout(std::move(tasks));
    const auto now = ctx.now();
    std::vector<store::JobStore::Found> found;
    std::map<std::string, std::string> history; // cluster -> how far back it lists
    // A group's members, by the group's token, to make its row once from all of them.
    std::map<std::string, std::vector<std::pair<const ClusterAsk*, const FoundJob*>>> groups;
    for (std::size_t n = 0; n < asks.size(); ++n) {
        const ClusterAsk& ask = *asks[n];
        if (!finished[n]) {
            ctx.abandon(ask.cluster);
            const std::string why = fmt::format(
                "no answer from {} within {}s", ask.cluster,
                std::chrono::duration_cast<std::chrono::seconds>(ctx.deadline(ask.cluster)).count());
            ctx.mark_unreachable(ask.cluster, why);
            report.problems.push_back(why);
            continue;
        }
        if (!ask.answer) {
            const Error& e = ask.answer.error();
            // The cluster's own messages usually name it already.
            const std::string why =
                e.message.rfind(ask.cluster, 0) == 0 ? e.message : fmt::format("{}: {}", ask.cluster, e.message);
            if (is_retryable(e.kind)) { // down or silent: the refresh after this would wait as long again
                ctx.mark_unreachable(ask.cluster, why);
            }
            report.problems.push_back("cannot look for jobs launched elsewhere on " + why);
            continue;
        }
        const Discovered& d = *ask.answer;
        report.me[ask.cluster] = d.me;
        history[ask.cluster] = d.history;
        if (d.unreadable > 0) {
            report.problems.push_back(fmt::format("{}: {} job(s) carry an identity tandem cannot read; left out",
                                                  ask.cluster, d.unreadable));
        }
        for (const auto& f : d.jobs) {
            report.owners[owner_key(ask.cluster, f.remote_id)] = f.owner;
            if (!f.callers) {
                if (all_users) {
                    report.others.push_back(ClusterJob{adopted_record(ask, f, now), f.owner});
                }
                continue;
            }
            if (!f.identity.group.empty()) {
                groups[f.identity.group].emplace_back(&ask, &f);
            }
            store::JobStore::Found one;
            one.job = adopted_record(ask, f, now);
            one.group_token = f.identity.group;
            found.push_back(std::move(one));
        }
    }
    if (found.empty()) {
        return report;
    }
    // Each group's row, from what its members say: its name, its clusters, its members so far.
    for (auto& one : found) {
        if (one.group_token.empty()) {
            continue;
        }
        const auto& members = groups[one.group_token];
        GroupHeader header;
        header.name = members.front().second->identity.name;
        header.kind = GroupKind::parallel;
        header.token = one.group_token;
        header.adopted = true;
        std::set<std::string> clusters;
        std::int64_t submitted = now;
        for (const auto& [ask, f] : members) {
            header.members.push_back(f->identity.member);
            clusters.insert(ask->cluster);
            if (f->submitted_at > 0) {
                submitted = std::min(submitted, f->submitted_at);
            }
        }
        JobRecord& g = one.group;
        g.name = header.name.empty() ? one.group_token : header.name;
        g.backend = JobRecord::k_group_backend;
        for (const auto& c : clusters) {
            g.cluster += (g.cluster.empty() ? "" : ",") + c;
        }
        g.state = JobState::pending;
        g.submitted_at = submitted;
        g.updated_at = now;
        g.spec_json = to_json(header).dump();
        g.placement_json = "{}";
        g.submit_token = one.group_token;
    }
    auto store = ctx.store();
    if (!store) {
        report.problems.push_back(store.error().message);
        return report;
    }
    auto ids = (*store)->adopt(found);
    if (!ids) {
        report.problems.push_back(ids.error().message);
        return report;
    }
    std::map<std::string, int> adopted_on;
    for (std::size_t i = 0; i < ids->size(); ++i) {
        if ((*ids)[i] != 0) {
            report.adopted.push_back((*ids)[i]);
            const auto& job = found[i].job;
            ++adopted_on[job.cluster];
            ctx.progress(fmt::format("job {} ({}) on {} as {}: launched elsewhere, found on the cluster",
                                     (*ids)[i], job.name, job.cluster, job.remote_id));
        }
    }
    // Where history is gone: what ended before the cluster's memory does not come back.
    for (const auto& [cluster, count] : adopted_on) {
        if (!history[cluster].empty()) {
            ctx.progress(fmt::format("{}: {} job(s) found; {}, so jobs that ended before that are not found",
                                     cluster, count, history[cluster]));
        }
    }
    return report;
}

} // namespace tandem::app
