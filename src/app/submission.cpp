#include "app/submission.hpp"

#include <fmt/format.h>

#include <thread>

#include "app/launch_lock.hpp"
#include "app/planning.hpp"
#include "core/backend_traits.hpp"
#include "core/quantity.hpp"

namespace tandem::app {

namespace {

std::string where(const Placement& p) {
    return p.pool.empty() ? p.cluster : p.cluster + "/" + p.pool;
}

bool starts_with(const std::string& text, std::string_view prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// 64-bit FNV-1a of the stored spec, 12 hex digits: tells two launches of the same spec apart from two of
// different ones, no more (the spec itself stays on the launching machine).
std::string spec_digest(std::string_view text) {
    std::uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : text) {
        h = (h ^ c) * 1099511628211ULL;
    }
    return fmt::format("{:012x}", h >> 16);
}

} // namespace

JobIdentity identity_of(Session& ctx, const JobRecord& job) {
    JobIdentity id;
    id.token = job.submit_token;
    id.name = job.name;
    id.host = ctx.host_name();
    id.digest = spec_digest(job.spec_json);
    id.version = std::string(k_tandem_version);
    if (job.parent_id) {
        id.member = job.member;
        if (auto store = ctx.store()) {
            if (auto group = (*store)->get(*job.parent_id); group && *group) {
                id.group = (*group)->submit_token;
                id.name = (*group)->name;
            }
        }
    }
    return id;
}

// --pending-timeout for every backend; else the task's config.<backend>.provision_timeout for that
// backend, then the task's config.pending_timeout, then the config file's pending_timeout.
Result<PendingTimeouts> pending_timeouts(Session& ctx, const std::optional<std::string>& flag,
                                         const TaskSpec& spec) {
    PendingTimeouts t;
    if (flag) {
        auto seconds = parse_duration_seconds(*flag);
        if (!seconds) {
            return fail(ErrorKind::usage, "--pending-timeout: " + seconds.error());
        }
        t.any = *seconds;
        t.from_task_or_flag = true;
        return t;
    }
    t.any = spec.pending_timeout_seconds ? spec.pending_timeout_seconds : ctx.config().pending_timeout_seconds;
    t.from_task_or_flag = spec.pending_timeout_seconds.has_value();
    for (const auto& kind : all_backend_traits()) {
        auto& own = t.own[static_cast<std::size_t>(kind.kind)];
        own = kind.provision_timeout != nullptr ? kind.provision_timeout(spec) : std::nullopt;
        t.from_task_or_flag = t.from_task_or_flag || own.has_value();
    }
    return t;
}


bool waiting_for_resources(const JobRecord& job) {
    if (job.state != JobState::pending) {
        return false;
    }
    // Slurm's reasons a user or a schedule imposes; nothing to gain from another cluster.
    for (std::string_view held : {"JobHeld", "Dependency", "BeginTime", "DependencyNeverSatisfied"}) {
        if (starts_with(job.reason, held)) {
            return false;
        }
    }
    return true;
}

Result<JobRecord> record_job(Session& ctx, const TaskSpec& spec, const Placement& placement,
                             std::optional<std::int64_t> parent, const std::string& reason) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    JobRecord job;
    job.name = spec.name;
    if (parent) {
        job.member = spec.name;
        job.parent_id = parent;
    }
    job.cluster = placement.cluster;
    job.backend = std::string(to_string(placement.kind));
    job.state = JobState::pending;
    job.reason = reason;
    job.submitted_at = ctx.now();
    job.updated_at = job.submitted_at;
    job.spec_json = to_redacted_json(spec).dump();
    job.placement_json = placement_json(placement).dump();
    job.gpus = placement_gpus(spec, placement);
    job.num_nodes = spec.num_nodes;
    // The lock first: a job in the store without a live launch holding its lock is one `status` settles.
    job.submit_token = ctx.new_token();
    if (auto held = hold_launch_lock(ctx.paths().state_dir, job.submit_token); !held) {
        return tl::unexpected(held.error());
    }
    auto id = (*store)->insert(job);
    if (!id) {
        release_launch_lock(ctx.paths().state_dir, job.submit_token);
        return tl::unexpected(id.error());
    }
    job.id = *id;
    return job;
}

Result<JobView> wait_while_pending(Session& ctx, Failover& failover, const PendingTimeouts& timeouts) {
    auto delay = std::chrono::milliseconds(500);
    bool told = false;
    for (;;) {
        JobView view = refresh_jobs(ctx, {failover.job()}).front();
        if (view.record.state != JobState::pending || view.record.remote_id.empty()) {
            return view;
        }
        const auto limit = timeouts.for_backend(view.record.backend);
        if (!limit) { // this placement waits for ever; the job stays here
            return view;
        }
        const std::int64_t timeout = *limit;
        if (!told && waiting_for_resources(view.record) && failover.can_move_on()) {
            ctx.progress(fmt::format("job {} is pending on {} ({}); moving on after {}", view.record.id,
                                     view.record.cluster, view.record.reason.empty() ? "queued" : view.record.reason,
                                     human_duration(timeout)));
            told = true;
        }
        auto moved = failover.move_on_if_stuck(view, timeout);
        if (!moved) {
            return tl::unexpected(moved.error());
        }
        if (*moved) {
            told = false;
            delay = std::chrono::milliseconds(500);
            continue;
        }
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 3 / 2, std::chrono::milliseconds(2000));
    }
}

Failover::Failover(Session& ctx, const TaskSpec& spec, std::vector<Placement> candidates, JobRecord job)
    : m_ctx(ctx), m_spec(spec), m_candidates(std::move(candidates)), m_job(std::move(job)) {}

std::optional<std::size_t> Failover::next_candidate(bool skip_same_pool) const {
    const Placement& now = m_candidates[m_current];
    for (std::size_t i = m_current + 1; i < m_candidates.size(); ++i) {
        const Placement& p = m_candidates[i];
        if (skip_same_pool && p.cluster == now.cluster && p.pool == now.pool) {
            continue; // the same queue again would wait just as long
        }
        return i;
    }
    return std::nullopt;
}

Result<bool> Failover::move_to(std::size_t next, const std::string& outcome) {
    auto store = m_ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    const Placement& from = m_candidates[m_current];
    const Placement& to = m_candidates[next];
    const auto now = m_ctx.now();
    store::Attempt finished{0,         from.cluster,    std::string(to_string(from.kind)),
                            from.pool, m_job.remote_id, m_placed_at,
                            now,       outcome};
    store::Move move{to.cluster, std::string(to_string(to.kind)), placement_json(to).dump(),
                     placement_gpus(m_spec, to), fmt::format("moving from {}", where(from)), m_ctx.new_token()};
    const std::string& state_dir = m_ctx.paths().state_dir;
    if (auto held = hold_launch_lock(state_dir, move.submit_token); !held) {
        return tl::unexpected(held.error());
    }
    auto moved = (*store)->move_job(m_job.id, m_job.remote_id, finished, move, now);
    if (!moved || !*moved) {
        release_launch_lock(state_dir, move.submit_token);
        return moved;
    }
    release_launch_lock(state_dir, m_job.submit_token);
    m_job.submit_token = move.submit_token;
    m_current = next;
    m_job.cluster = to.cluster;
    m_job.backend = move.backend;
    m_job.remote_id.clear();
    m_job.state = JobState::pending;
    m_job.reason = move.reason;
    m_job.gpus = move.gpus;
    m_job.placement_json = move.placement_json;
    return true;
}

Status Failover::submit(std::optional<Result<std::string>> first) {
    auto store = m_ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    for (;;) {
        const Placement& placement = m_candidates[m_current];
        m_placed_at = m_ctx.now();
        auto backend = m_ctx.backend(placement.cluster);
        m_ctx.fault_point("launch.recorded");
        Result<std::string> remote_id =
            first     ? std::move(*first)
            : backend ? (*backend)->submit(m_spec, placement, m_job.id, identity_of(m_ctx, m_job))
                      : tl::unexpected(backend.error());
        first.reset();
        if (remote_id) {
            m_ctx.fault_point("launch.submitted");
            auto active = (*store)->set_remote_id(m_job.id, *remote_id);
            if (!active) {
                return tl::unexpected(active.error()); // the lock stays: `status` settles the job
            }
            release_launch_lock(m_ctx.paths().state_dir, m_job.submit_token);
            m_ctx.fault_point("launch.stored");
            m_job.remote_id = *remote_id;
            if (!*active) {
                // Cancelled (`tandem cancel`) while the submit was under way: the job must not run on.
                m_job.state = JobState::cancelled;
                Status cancelled = backend ? (*backend)->cancel(m_job) : Status{tl::unexpected(backend.error())};
                if (!cancelled) {
                    return fail(ErrorKind::remote,
                                fmt::format("job {} was cancelled while it was being submitted, and cancelling "
                                            "what {} took ({}) failed: {}",
                                            m_job.id, where(placement), *remote_id, cancelled.error().message),
                                fmt::format("`tandem cancel {}` tries again", m_job.id));
                }
                return fail(ErrorKind::remote,
                            fmt::format("job {} was cancelled while it was being submitted; what {} took ({}) "
                                        "is cancelled too",
                                        m_job.id, where(placement), *remote_id));
            }
            m_ctx.progress(fmt::format("job {} ({}) submitted to {} as {} [{}]", m_job.id, m_job.name,
                             where(placement), *remote_id, placement.option_label));
            return {};
        }
        const Error& e = remote_id.error();
        const auto next = e.refused ? next_candidate(false) : std::nullopt;
        if (e.refused) {
            m_refusals.push_back(fmt::format("{}: {}", where(placement), e.message));
        }
        if (next) {
            m_ctx.progress(fmt::format("{} declined job {}: {}; trying {}", where(placement), m_job.id,
                             e.message, where(m_candidates[*next])));
            auto moved = move_to(*next, "refused: " + e.message);
            if (!moved) {
                return tl::unexpected(moved.error());
            }
            if (*moved) {
                continue;
            }
            return fail(ErrorKind::remote, fmt::format("job {} was cancelled while being placed", m_job.id));
        }
        if (!e.refused && !e.before_submit && is_retryable(e.kind)) {
            // The connection failed or timed out around the submit: the cluster may have taken the job all
            // the same. Guessing FAILED could leave it running unseen; the job stays PENDING, and `status`
            // asks the cluster for its token (find_submitted) once it answers.
            const auto now = m_ctx.now();
            JobUpdate unsure{JobState::pending, fmt::format("{} {}", k_submit_unsure_reason, e.message),
                             std::nullopt, std::nullopt, std::nullopt};
            (void)(*store)->update(m_job.id, unsure, now);
            release_launch_lock(m_ctx.paths().state_dir, m_job.submit_token);
            Error out = e;
            out.message = fmt::format("job {}: submit to {} failed: {}", m_job.id, placement.cluster, e.message);
            out.hint = fmt::format("{} may have taken it before the connection failed; the next `tandem status` "
                                   "asks it and records what it finds",
                                   placement.cluster);
            return tl::unexpected(out);
        }
        // The last candidate failed (or the failure was not a refusal): the job ends here, saying why.
        const std::string why = m_refusals.size() > 1 ? "every candidate declined it" : e.message;
        JobUpdate failed{JobState::failed, "submit failed: " + why, std::nullopt, std::nullopt,
                         m_ctx.now()};
        (void)(*store)->update(m_job.id, failed, m_ctx.now());
        release_launch_lock(m_ctx.paths().state_dir, m_job.submit_token);
        Error out = e;
        out.refused = false;
        if (m_refusals.size() > 1) {
            out.message = fmt::format("job {}: no cluster took it:", m_job.id);
            for (const auto& r : m_refusals) {
                out.message += "\n  " + r;
            }
            out.hint = "see `tandem plan FILE` and `tandem infra`";
        } else {
            out.message =
                fmt::format("job {}: submit to {} failed: {}", m_job.id, placement.cluster, e.message);
        }
        return tl::unexpected(out);
    }
}

Result<bool> Failover::move_on_if_stuck(const JobView& view, std::int64_t timeout_seconds) {
    if (view.unreachable || !waiting_for_resources(view.record)) {
        return false;
    }
    const auto waited = m_ctx.now() - m_placed_at;
    if (waited < timeout_seconds) {
        return false;
    }
    const auto next = next_candidate(true);
    if (!next) {
        return false; // nowhere else to go: keep waiting here
    }
    const Placement& here = m_candidates[m_current];
    auto backend = m_ctx.backend(here.cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    // Cancel first, and only move on once the cancel was accepted: never two live copies.
    if (auto cancelled = (*backend)->cancel(view.record); !cancelled) {
        m_ctx.progress(fmt::format("job {} pending {} on {}, but the cancel failed ({}); staying", m_job.id,
                         human_duration(waited), where(here), cancelled.error().message));
        return false;
    }
    const std::string reason = view.record.reason.empty() ? "" : " (" + view.record.reason + ")";
    m_ctx.progress(fmt::format("job {} pending {} on {}{}: cancelled there; trying {}", m_job.id,
                     human_duration(waited), where(here), reason, where(m_candidates[*next])));
    m_job.remote_id = view.record.remote_id;
    auto moved = move_to(*next, fmt::format("pending {}{}: cancelled", human_duration(waited), reason));
    if (!moved || !*moved) {
        return moved; // not moved: the user cancelled it meanwhile
    }
    if (auto ok = submit(); !ok) {
        return tl::unexpected(ok.error());
    }
    return true;
}

} // namespace tandem::app
