#include "app/job_tracker.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "app/fanout.hpp"
#include "app/launch_lock.hpp"
#include "core/job_recovery.hpp"
#include "core/sweep.hpp"

namespace tandem::app {

namespace {

// What one cluster's refresh produced, owned jointly with its thread (which may outlive the wait).
struct ClusterRefresh {
    Backend* backend = nullptr;
    std::vector<std::size_t> indexes; // into the views
    std::vector<JobRecord> batch;
    Result<std::vector<JobUpdate>> updates = std::vector<JobUpdate>{};
};

// Stores one cluster's refresh and brings its views up to date with what the store kept.
void apply_updates(const Session& ctx, store::JobStore* store, std::vector<JobView>& views,
                   const std::vector<std::size_t>& indexes, const std::vector<JobUpdate>& updates) {
    const auto now = ctx.now();
    std::vector<std::pair<std::int64_t, JobUpdate>> changes;
    std::vector<std::string> remote_ids;
    for (std::size_t k = 0; k < indexes.size(); ++k) {
        JobView& view = views[indexes[k]];
        const JobUpdate& u = updates[k];
        if (u.state == JobState::unknown) {
            view.unreachable = true;
            view.unreachable_reason = u.reason;
            continue;
        }
        changes.emplace_back(view.record.id, u);
        remote_ids.push_back(view.record.remote_id);
    }
    auto applied =
        store != nullptr ? store->update_many(changes, now, remote_ids) : Result<std::vector<bool>>{};
    std::size_t c = 0;
    for (std::size_t k = 0; k < indexes.size(); ++k) {
        JobView& view = views[indexes[k]];
        if (view.unreachable) {
            continue;
        }
        const bool written = applied && c < applied->size() && (*applied)[c];
        const JobUpdate& u = changes[c++].second;
        if (!written && store != nullptr) {
            // Not written: another tandem ended this job meanwhile (a cancel). The store decides.
            if (auto fresh = store->get(view.record.id); fresh && *fresh) {
                view.record = **fresh;
                continue;
            }
        }
        JobRecord& r = view.record;
        r.state = u.state;
        r.reason = u.reason;
        r.exit_code = u.exit_code ? u.exit_code : r.exit_code;
        r.started_at = r.started_at ? r.started_at : u.started_at;
        r.ended_at = u.ended_at ? u.ended_at : r.ended_at;
        r.recoveries = u.recoveries ? merge_recoveries(r.recoveries, *u.recoveries) : r.recoveries;
        r.elements = u.elements ? *u.elements : r.elements;
        r.updated_at = now;
    }
}

} // namespace

namespace {

// A job whose launch is gone (killed, crashed, its machine lost power) before it stored the remote id:
// ask the cluster for the job carrying its submit token. Found: the job is tracked from here on, as if the
// launch had stored it. Not found: nothing ran, and the job ends FAILED saying so. Nothing is submitted
// here, so a job is never submitted twice. Returns why the cluster could not tell, when it could not.
std::optional<std::string> settle_abandoned_launch(Session& ctx, JobRecord& job) {
    auto lock = take_abandoned_launch(ctx.paths().state_dir, job.submit_token);
    if (!lock) {
        return std::nullopt; // its launch is alive and submitting
    }
    auto store = ctx.store();
    if (!store) {
        return store.error().message;
    }
    if (auto fresh = (*store)->get(job.id); fresh && *fresh) {
        job = **fresh; // the launch may have finished just before it let go of the lock
    }
    if (is_terminal(job.state) || !job.remote_id.empty()) {
        return std::nullopt;
    }
    auto backend = ctx.backend(job.cluster);
    if (!backend) {
        return backend.error().message;
    }
    // A launch that knew its submit failed in transit said so in the reason; otherwise it was interrupted.
    const bool unsure = job.reason.rfind(k_submit_unsure_reason, 0) == 0;
    auto found = (*backend)->find_submitted(job);
    if (!found) {
        return fmt::format("{}, and {} could not say whether it took the job: {}",
                           unsure ? "its submit failed in transit" : "its launch was interrupted", job.cluster,
                           found.error().message);
    }
    const auto now = ctx.now();
    if (*found) {
        auto active = (*store)->set_remote_id(job.id, **found);
        if (!active) {
            return active.error().message;
        }
        job.remote_id = **found;
        ctx.progress(fmt::format("job {}: {}; {} holds it as {}", job.id,
                         unsure ? "its submit's answer was lost" : "its launch was interrupted after the submit",
                         job.cluster, job.remote_id));
        return std::nullopt;
    }
    const std::string failure = job.reason.substr(std::min(job.reason.size(), k_submit_unsure_reason.size() + 1));
    JobUpdate failed{JobState::failed,
                     unsure ? fmt::format("submit failed: {} did not take the job ({})", job.cluster, failure)
                            : std::string("launch interrupted before submitting"),
                     std::nullopt, std::nullopt, now};
    if (auto ok = (*store)->update(job.id, failed, now); !ok) {
        return ok.error().message;
    }
    job.state = failed.state;
    job.reason = failed.reason;
    job.ended_at = now;
    job.updated_at = now;
    return std::nullopt;
}

} // namespace

std::vector<JobView> refresh_jobs(Session& ctx, std::vector<JobRecord> jobs) {
    std::vector<JobView> views;
    views.reserve(jobs.size());
    std::map<std::string, std::vector<std::size_t>> active_by_cluster;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        std::optional<std::string> unsettled;
        if (!is_terminal(jobs[i].state) && jobs[i].remote_id.empty() && !jobs[i].is_group() &&
            !jobs[i].submit_token.empty()) {
            unsettled = settle_abandoned_launch(ctx, jobs[i]);
        }
        if (!unsettled && !is_terminal(jobs[i].state) && !jobs[i].remote_id.empty()) {
            active_by_cluster[jobs[i].cluster].push_back(i);
        }
        views.push_back(JobView{std::move(jobs[i]), unsettled.has_value(), unsettled.value_or("")});
    }
    auto store = ctx.store();
    // Backends are made on this thread, then every cluster is asked at once.
    std::vector<std::string> names;
    std::vector<std::shared_ptr<ClusterRefresh>> work;
    std::vector<FanoutTask> tasks;
    for (auto& [cluster, indexes] : active_by_cluster) {
        if (const std::string* why = ctx.unreachable(cluster)) {
            for (auto i : indexes) {
                views[i].unreachable = true;
                views[i].unreachable_reason = *why;
            }
            continue;
        }
        auto backend = ctx.backend(cluster);
        if (!backend) {
            for (auto i : indexes) {
                views[i].unreachable = true;
                views[i].unreachable_reason = backend.error().message;
            }
            continue;
        }
        auto w = std::make_shared<ClusterRefresh>();
        w->backend = *backend;
        w->indexes = std::move(indexes);
        for (auto i : w->indexes) {
            w->batch.push_back(views[i].record);
        }
        tasks.push_back(
            FanoutTask{[w] { w->updates = w->backend->refresh(w->batch); }, ctx.deadline(cluster)});
        names.push_back(cluster);
        work.push_back(std::move(w));
    }
    const auto finished = run_fanout(std::move(tasks));
    for (std::size_t n = 0; n < work.size(); ++n) {
        const auto& indexes = work[n]->indexes;
        auto mark_unknown = [&](const std::string& why) {
            for (auto i : indexes) {
                views[i].unreachable = true;
                views[i].unreachable_reason = why;
            }
        };
        if (!finished[n]) {
            ctx.abandon(names[n]);
            mark_unknown(fmt::format(
                "no answer from {} within {}s", names[n],
                std::chrono::duration_cast<std::chrono::seconds>(ctx.deadline(names[n])).count()));
            continue;
        }
        const auto& updates = work[n]->updates;
        if (!updates || updates->size() != indexes.size()) {
            mark_unknown(updates ? "the backend answered for the wrong number of jobs"
                                 : updates.error().message);
            continue;
        }
        apply_updates(ctx, store ? *store : nullptr, views, indexes, *updates);
    }
    return views;
}

Result<JobRecord> find_job(Session& ctx, const std::string& id_text) {
    std::int64_t id = 0;
    auto [ptr, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (id_text.empty() || ec != std::errc{} || ptr != id_text.data() + id_text.size() || id <= 0) {
        return fail(ErrorKind::usage,
                    fmt::format("'{}' is not a job id (a positive number, see `tandem status`)", id_text));
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    auto job = (*store)->get(id);
    if (!job) {
        return tl::unexpected(job.error());
    }
    if (!*job) {
        return fail(ErrorKind::not_found, fmt::format("job {} does not exist", id),
                    "see `tandem status --all`");
    }
    return **job;
}

JobView wait_for_job(Session& ctx, const JobRecord& job) {
    auto delay = std::chrono::milliseconds(100);
    std::string last_problem;
    while (true) {
        auto views = refresh_jobs(ctx, {job});
        JobView view = std::move(views.front());
        if (is_terminal(view.record.state)) {
            return view;
        }
        if (view.unreachable && view.unreachable_reason != last_problem) {
            ctx.progress(fmt::format("cannot reach {} ({}); still waiting", job.cluster, view.unreachable_reason));
        }
        last_problem = view.unreachable ? view.unreachable_reason : "";
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 3 / 2, std::chrono::milliseconds(2000));
    }
}

Result<bool> cancel_element(Session& ctx, JobRecord& job, std::size_t element) {
    const auto sweep = sweep_of(job);
    if (!sweep) {
        return fail(ErrorKind::usage, fmt::format("--element: job {} is not a sweep", job.id));
    }
    if (element >= sweep->size()) {
        return fail(ErrorKind::usage, fmt::format("--element {}: job {} has elements 0-{}", element, job.id,
                                                  sweep->size() - 1));
    }
    auto states = parse_element_states(job.elements).value_or(std::vector<ElementState>{});
    states.resize(sweep->size(), ElementState{JobState::pending, std::nullopt});
    if (is_terminal(states[element].state)) {
        return false;
    }
    if (!job.remote_id.empty()) {
        auto backend = ctx.backend(job.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        auto cancel = require(**backend, &Capabilities::element_cancel, Capability::element_cancel, job.id);
        if (!cancel) {
            return tl::unexpected(cancel.error());
        }
        if (auto ok = (*cancel)->cancel_element(job, element); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    states[element] = ElementState{JobState::cancelled, std::nullopt};
    JobUpdate u = sweep_update(*sweep, states, "");
    if (is_terminal(u.state) && !is_terminal(job.state)) {
        u.state = job.state; // the cluster says when the sweep has ended
        u.reason = job.reason;
    }
    u.exit_code = job.exit_code;
    if (auto ok = (*store)->update(job.id, u, ctx.now()); !ok) {
        return tl::unexpected(ok.error());
    }
    job.elements = *u.elements;
    return true;
}

Status cancel_job(Session& ctx, JobRecord& job, const std::string& reason) {
    if (!job.remote_id.empty()) {
        auto backend = ctx.backend(job.cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        if (auto ok = (*backend)->cancel(job); !ok) {
            return ok;
        }
        ctx.fault_point("cancel.remote");
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    const auto now = ctx.now();
    JobUpdate cancelled{JobState::cancelled, reason, std::nullopt, std::nullopt, now};
    if (const auto sweep = sweep_of(job)) { // the elements still going end with it; the ended keep theirs
        auto states = parse_element_states(job.elements).value_or(std::vector<ElementState>{});
        states.resize(sweep->size(), ElementState{JobState::pending, std::nullopt});
        for (auto& e : states) {
            e = is_terminal(e.state) ? e : ElementState{JobState::cancelled, std::nullopt};
        }
        cancelled.elements = format_element_states(states);
        job.elements = *cancelled.elements;
    }
    if (auto ok = (*store)->update(job.id, cancelled, now); !ok) {
        return ok;
    }
    job.state = JobState::cancelled;
    job.reason = reason;
    job.ended_at = now;
    return {};
}

} // namespace tandem::app
