// Kubernetes Jobs -> tandem states. The whole decision, in order:
//  1. No Job listed                         UNKNOWN "the Kubernetes Job is gone..." (the caller decides)
//  2. A Job has condition Failed=True        FAILED; the reason comes from the earliest failed pod of that
//                                            Job ("OOMKilled" 137, "exit code 3", "Evicted: ..."), except
//                                            DeadlineExceeded (the pods were killed by the controller, their
//                                            codes are not the job's), else the condition's reason
//  3. Every Job Complete=True, all ranks     SUCCEEDED "exit code 0"
//  4. Otherwise, per rank, its newest pod:   any rank Running -> RUNNING; else Unknown -> UNKNOWN; else
//                                            STARTING (scheduled, creating containers); else PENDING with the
//                                            scheduler's message, the stuck waiting reason, the Job's
//                                            FailedCreate event, or "waiting for ...". A multi-rank reason
//                                            names the rank that is not running ("rank 1: ...").
// A pod that failed while its Job has not (yet) failed is PENDING: the Job controller retries it or fails
// the Job within a moment, and only it knows which (backoffLimit, podFailurePolicy). A failed pod another
// pod of its rank replaced is a recovery (recoveries_of), never the job's reason.

#include "backends/k8s/job_state.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "backends/k8s/job_state_pods.hpp"
#include "backends/k8s/job_state_sweep.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/labels.hpp"
#include "core/job_recovery.hpp"

namespace tandem::k8s {

namespace {

using detail::PodObservation;
using nlohmann::json;

std::optional<int> int_text(std::string_view s) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty() ? std::optional<int>(v)
                                                                         : std::nullopt;
}

std::optional<std::int64_t> int64_text(std::string_view s) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty() ? std::optional<std::int64_t>(v)
                                                                         : std::nullopt;
}

std::string label(const json& obj, std::string_view key) {
    return fields::str(fields::get(fields::at(obj, "metadata", "labels"), key));
}

// -1: the Job covers every rank (a single Job or an Indexed Job).
int rank_of_job(const json& job) {
    return int_text(label(job, k_rank_label)).value_or(-1);
}

int rank_of_pod(const json& pod) {
    if (auto r = int_text(label(pod, k_rank_label))) {
        return *r;
    }
    const auto index =
        fields::str(fields::get(fields::at(pod, "metadata", "annotations"), k_completion_index_annotation));
    return int_text(index).value_or(0);
}

const json* condition(const json& job, std::string_view type) {
    if (const json* conds = fields::at(job, "status", "conditions"); conds != nullptr && conds->is_array()) {
        for (const auto& c : *conds) {
            if (fields::str_at(c, "type") == type && fields::str_at(c, "status") == "True") {
                return &c;
            }
        }
    }
    return nullptr;
}

struct PodInfo {
    const json* pod = nullptr;
    int rank = 0;
    std::int64_t created = 0;
    PodObservation obs;
};

// Of two pods of one rank, whether `b` came after `a`: by creation (whole seconds), then a pod still
// going or succeeded after one that failed in the same second (a pod that fails at once is replaced
// within the second), then by when each ended, then by name: a strict order.
bool later(const PodInfo& a, const PodInfo& b) {
    if (a.created != b.created) {
        return b.created > a.created;
    }
    const auto end_a = a.obs.finished_at.value_or(INT64_MAX), end_b = b.obs.finished_at.value_or(INT64_MAX);
    const bool failed_a = a.obs.state == JobState::failed, failed_b = b.obs.state == JobState::failed;
    if (failed_a != failed_b) {
        return failed_a;
    }
    if (end_a != end_b) {
        return end_b > end_a;
    }
    // Still alike: two pods made, run and ended within one second (1.20's controller replaces a pod that
    // failed at once without waiting). The one written last is the later attempt: the controller made it
    // only after it saw the other fail, and each pod's last write (its end, or a finalizer removed once it
    // is counted) follows in that order. resourceVersion is etcd's revision, a number; compared only when
    // both read as one. Then the name, so that of any two pods exactly one is the later.
    const auto rv_a = int64_text(fields::str_at(*a.pod, "metadata", "resourceVersion"));
    const auto rv_b = int64_text(fields::str_at(*b.pod, "metadata", "resourceVersion"));
    if (rv_a && rv_b && *rv_a != *rv_b) {
        return *rv_b > *rv_a;
    }
    return fields::str_at(*b.pod, "metadata", "name") > fields::str_at(*a.pod, "metadata", "name");
}

// A pod deleted (or failed) before any container of it ran: the Job controller removing a surplus pod as
// it gives up (1.20's controller may have made one more before counting the last failure).
bool stillborn(const PodInfo& p) {
    const bool ending = p.obs.state == JobState::failed ||
                        fields::at(*p.pod, "metadata", "deletionTimestamp") != nullptr;
    return ending && !p.obs.started_at && !p.obs.exit_code;
}

// Whether another pod of p's rank came after it (the Job controller replaced it) and got to run or may
// still run. Once the Job has failed (`job_failed`), a pod being deleted is one the controller stops as
// it gives up, not a replacement (1.20's controller may make one more before it counts the last failure).
bool replaced(const PodInfo& p, const std::vector<PodInfo>& pods, bool job_failed) {
    return std::any_of(pods.begin(), pods.end(), [&](const PodInfo& q) {
        const bool stopped_at_end =
            job_failed && fields::at(*q.pod, "metadata", "deletionTimestamp") != nullptr;
        return &q != &p && q.rank == p.rank && later(p, q) && !stillborn(q) && !stopped_at_end;
    });
}

bool pod_of_job(const PodInfo& p, const json& job) {
    const int jr = rank_of_job(job);
    return jr < 0 || p.rank == jr;
}

std::string ranked(bool multi, int rank, const std::string& reason) {
    return multi && rank >= 0 ? fmt::format("rank {}: {}", rank, reason) : reason;
}

template <typename T> void keep_min(std::optional<T>& into, std::optional<T> v) {
    if (v && (!into || *v < *into)) {
        into = v;
    }
}

template <typename T> void keep_max(std::optional<T>& into, std::optional<T> v) {
    if (v && (!into || *v > *into)) {
        into = v;
    }
}

struct Failure {
    std::string reason;
    std::optional<int> exit_code;
    int rank = -1;
    std::optional<std::int64_t> at;
};

Failure failure_of(const json& job, const json& failed_cond, const std::vector<PodInfo>& pods) {
    Failure f;
    f.rank = rank_of_job(job);
    f.at = detail::time_at(fields::get(&failed_cond, "lastTransitionTime"));
    const auto cond_reason = fields::str_at(failed_cond, "reason");
    if (cond_reason == "DeadlineExceeded") {
        f.reason = "DeadlineExceeded";
        return f;
    }
    const PodInfo* first = nullptr;
    for (const auto& p : pods) {
        if (p.obs.state != JobState::failed || !pod_of_job(p, job) || replaced(p, pods, true)) {
            continue; // a replaced pod's failure was recovered from: the last attempts decide
        }
        const auto t = p.obs.finished_at.value_or(INT64_MAX);
        if (first == nullptr || t < first->obs.finished_at.value_or(INT64_MAX)) {
            first = &p;
        }
    }
    if (first != nullptr) {
        f.reason = first->obs.reason;
        f.exit_code = first->obs.exit_code;
        f.rank = first->rank;
        keep_min(f.at, first->obs.finished_at);
        return f;
    }
    f.reason = cond_reason.empty() ? std::string("failed") : cond_reason;
    return f;
}

std::optional<std::int64_t> ended_at(const JobView& view, const std::vector<PodInfo>& pods) {
    std::optional<std::int64_t> end;
    for (const json* job : view.jobs) {
        keep_max(end, detail::time_at(fields::at(*job, "status", "completionTime")));
    }
    if (!end) {
        for (const auto& p : pods) {
            keep_max(end, p.obs.finished_at);
        }
    }
    if (!end) {
        for (const json* job : view.jobs) {
            if (const json* c = condition(*job, "Failed")) {
                keep_max(end, detail::time_at(fields::get(c, "lastTransitionTime")));
            }
        }
    }
    return end;
}

// The job's Job for `rank`: its per-rank Job, else the Job covering every rank, else nullptr.
const json* job_for_rank(const JobView& view, int rank) {
    const json* all = nullptr;
    for (const json* job : view.jobs) {
        const int jr = rank_of_job(*job);
        if (jr == rank) {
            return job;
        }
        all = jr < 0 ? job : all;
    }
    return all;
}

PodObservation rank_state(const JobView& view, const std::vector<PodInfo>& pods, int rank) {
    PodObservation o;
    const json* job = job_for_rank(view, rank);
    if (job == nullptr && !view.jobs_unread) {
        o.state = JobState::pending;
        o.reason = "its Kubernetes Job is missing";
        return o;
    }
    if (job != nullptr && condition(*job, "Complete") != nullptr) {
        o.state = JobState::succeeded;
        return o;
    }
    const PodInfo* newest = nullptr;
    for (const auto& p : pods) {
        if (p.rank == rank && (newest == nullptr || later(*newest, p))) {
            newest = &p;
        }
    }
    if (newest == nullptr) {
        const auto name = job ? fields::str_at(*job, "metadata", "name") : std::string();
        const auto message = detail::latest_event_message(view.events, "Job", name, "FailedCreate");
        o.state = JobState::pending;
        o.reason = message.empty() ? "waiting for the Job controller to create the pod" : message;
        return o;
    }
    o = newest->obs;
    if (o.state == JobState::failed) { // the Job has not failed: a retry or the Failed condition follows
        o.state = JobState::pending;
        o.reason += "; waiting for the Job controller to retry or fail it";
    }
    return o;
}

JobUpdate from_ranks(const JobView& view, const std::vector<PodInfo>& pods, int ranks) {
    std::vector<PodObservation> states;
    for (int r = 0; r < ranks; ++r) {
        states.push_back(rank_state(view, pods, r));
    }
    const bool multi = ranks > 1;
    auto first_in = [&](std::initializer_list<JobState> wanted) -> int {
        for (int r = 0; r < ranks; ++r) {
            if (std::find(wanted.begin(), wanted.end(), states[static_cast<std::size_t>(r)].state) !=
                wanted.end()) {
                return r;
            }
        }
        return -1;
    };
    JobUpdate u;
    if (const int r = first_in({JobState::running}); r >= 0) {
        u.state = JobState::running;
        // Name what holds the job back: a rank not running yet, else a running rank's own trouble.
        const int behind = first_in({JobState::unknown, JobState::starting, JobState::pending});
        if (behind >= 0) {
            u.reason = ranked(multi, behind, states[static_cast<std::size_t>(behind)].reason);
        } else {
            for (int k = 0; k < ranks && u.reason.empty(); ++k) {
                const auto& s = states[static_cast<std::size_t>(k)];
                u.reason =
                    s.state == JobState::running && !s.reason.empty() ? ranked(multi, k, s.reason) : "";
            }
        }
        return u;
    }
    for (JobState s : {JobState::unknown, JobState::starting, JobState::pending}) {
        if (const int r = first_in({s}); r >= 0) {
            u.state = s;
            u.reason = ranked(multi, r, states[static_cast<std::size_t>(r)].reason);
            return u;
        }
    }
    // Every rank ended well but the Job controller has not marked the Job Complete yet.
    u.state = JobState::running;
    u.reason = "completing";
    return u;
}

bool disrupted(const json& pod) {
    return detail::disruption(pod).has_value();
}

// The job's recoveries as its pods tell them: every pod of a rank that ended in failure and was followed
// by another pod of that rank (the Job controller replaced it), oldest first. A disrupted pod (evicted,
// preempted, node lost: DisruptionTarget) is `e`; an exit code of the Jobs' recover-on-exit-codes
// annotation `c<code>`, any other `x<code>`. Pods replaced after an eviction are gone once they ended
// (the eviction deleted them), so a refresh may see fewer than an earlier one: the store keeps the union
// (merge_recoveries). nullopt when there are none.
std::optional<std::string> recoveries_of(const JobView& view, const std::vector<PodInfo>& pods, bool job_failed) {
    std::vector<int> recover_codes;
    for (const json* job : view.jobs) {
        const auto text =
            fields::str(fields::get(fields::at(*job, "metadata", "annotations"), k_recover_codes_annotation));
        for (int c : parse_exit_codes(text)) {
            recover_codes.push_back(c);
        }
    }
    std::vector<const PodInfo*> recovered;
    for (const auto& p : pods) {
        if (p.obs.state != JobState::failed && !disrupted(*p.pod)) {
            continue;
        }
        if (replaced(p, pods, job_failed)) {
            recovered.push_back(&p);
        }
    }
    if (recovered.empty()) {
        return std::nullopt;
    }
    std::stable_sort(recovered.begin(), recovered.end(),
                     [](const PodInfo* a, const PodInfo* b) { return a->created < b->created; });
    std::vector<RecoveryEvent> events;
    for (const PodInfo* p : recovered) {
        RecoveryEvent e;
        if (disrupted(*p->pod)) {
            e.kind = RecoveryEvent::Kind::disruption;
        } else if (p->obs.exit_code && *p->obs.exit_code >= 0 && *p->obs.exit_code <= 255) {
            const int code = *p->obs.exit_code;
            const bool free = std::find(recover_codes.begin(), recover_codes.end(), code) != recover_codes.end();
            e.kind = free ? RecoveryEvent::Kind::recover_code : RecoveryEvent::Kind::exit_code;
            e.code = code;
        } else {
            continue; // ended without an exit code (deleted before it started): nothing to name
        }
        if (events.size() < k_max_recovery_events) {
            events.push_back(e);
        }
    }
    return events.empty() ? std::nullopt : std::optional<std::string>(format_recoveries(events));
}

bool all_ranks_complete(const JobView& view, int ranks) {
    std::set<int> done;
    for (const json* job : view.jobs) {
        if (condition(*job, "Complete") == nullptr) {
            return false;
        }
        const int jr = rank_of_job(*job);
        if (jr < 0) {
            return true;
        }
        done.insert(jr);
    }
    return static_cast<int>(done.size()) >= ranks;
}

// The view's sweep: the record's, else an annotated Job's size with elements named by index.
std::optional<Sweep> sweep_of_view(const JobView& view) {
    if (view.sweep) {
        return view.sweep;
    }
    for (const json* job : view.jobs) {
        const auto text =
            fields::str(fields::get(fields::at(*job, "metadata", "annotations"), k_sweep_annotation));
        if (auto n = int_text(text); n && *n > 0) {
            if (auto ranks = sweep_ranks(*n)) {
                return std::move(*ranks);
            }
        }
    }
    return std::nullopt;
}

JobUpdate sweep_state(const JobView& view, const Sweep& sweep, const std::vector<PodInfo>& pods,
                      const std::optional<Failure>& failure) {
    detail::SweepObservation seen;
    seen.indexes.resize(sweep.size());
    std::vector<const PodInfo*> newest(sweep.size(), nullptr);
    for (const auto& p : pods) {
        const auto i = static_cast<std::size_t>(p.rank);
        if (p.rank >= 0 && i < newest.size() && (newest[i] == nullptr || later(*newest[i], p))) {
            newest[i] = &p;
        }
    }
    for (std::size_t i = 0; i < newest.size(); ++i) {
        if (newest[i] != nullptr) {
            seen.indexes[i] = detail::SweepObservation::Index{
                newest[i]->obs, fields::at(*newest[i]->pod, "metadata", "deletionTimestamp") != nullptr,
                disrupted(*newest[i]->pod)};
        }
    }
    seen.job_failed = failure.has_value();
    if (failure && failure->reason == "DeadlineExceeded") {
        seen.failed_reason = failure->reason;
    }
    seen.job_complete = !failure && all_ranks_complete(view, 1);
    seen.failed_index.assign(sweep.size(), false);
    for (const json* job : view.jobs) {
        seen.suspended = seen.suspended || condition(*job, "Suspended") != nullptr;
        const auto text = fields::str_at(*job, "status", "failedIndexes");
        for (std::size_t i : index_list(text, sweep.size()).value_or(std::vector<std::size_t>{})) {
            seen.failed_index[i] = true;
        }
    }
    return detail::sweep_job_update(sweep, seen);
}

} // namespace

std::map<std::string, JobView> group_by_tandem_job(const json& job_list, const json& pod_list,
                                                   const json* event_list) {
    std::map<std::string, JobView> out;
    std::map<std::pair<std::string, std::string>, std::string> owner; // (kind, name) -> group
    for (const auto& job : fields::items(job_list)) {
        if (auto key = label(job, k_job_label); !key.empty()) {
            auto& view = out[key];
            view.jobs.push_back(&job);
            owner[{"Job", fields::str_at(job, "metadata", "name")}] = key;
        }
    }
    for (const auto& pod : fields::items(pod_list)) {
        if (auto key = label(pod, k_job_label); !key.empty()) {
            out[key].pods.push_back(&pod);
            owner[{"Pod", fields::str_at(pod, "metadata", "name")}] = key;
        }
    }
    if (event_list != nullptr) {
        for (const auto& ev : fields::items(*event_list)) {
            auto it = owner.find(
                {fields::str_at(ev, "involvedObject", "kind"), fields::str_at(ev, "involvedObject", "name")});
            if (it != owner.end()) {
                out[it->second].events.push_back(&ev);
            }
        }
    }
    for (auto& [key, view] : out) {
        int ranks = static_cast<int>(view.jobs.size());
        for (const json* job : view.jobs) {
            if (const int rank = rank_of_job(*job); rank < std::numeric_limits<int>::max()) {
                ranks = std::max(ranks, rank + 1); // (a rank label of INT_MAX would overflow)
            }
            const json* completions = fields::at(*job, "spec", "completions");
            const bool sweep =
                fields::get(fields::at(*job, "metadata", "annotations"), k_sweep_annotation) != nullptr;
            if (fields::str_at(*job, "spec", "completionMode") == "Indexed" && completions != nullptr &&
                completions->is_number_integer() && !sweep) { // a sweep's indexes are elements
                ranks = std::max(ranks, completions->get<int>());
            }
        }
        view.expected_ranks = std::max(1, ranks);
    }
    return out;
}

void add_record(JobView& view, const JobRecord& job) {
    view.expected_ranks = job.num_nodes;
    view.sweep = sweep_of(job);
}

bool pods_decide(const JobView& view) {
    if (view.sweep) {
        return false;
    }
    std::set<int> ranks;
    for (const json* pod : view.pods) {
        const json* phase = fields::at(*pod, "status", "phase");
        const bool live =
            phase != nullptr && phase->is_string() && (*phase == "Pending" || *phase == "Running");
        if (!live || fields::at(*pod, "metadata", "deletionTimestamp") != nullptr) {
            return false;
        }
        ranks.insert(rank_of_pod(*pod));
    }
    for (int r = 0; r < std::max(1, view.expected_ranks); ++r) {
        if (ranks.count(r) == 0) {
            return false;
        }
    }
    return true;
}

JobUpdate to_job_update(const JobView& view) {
    JobUpdate u;
    if (view.jobs.empty() && !view.jobs_unread) {
        u.state = JobState::unknown;
        u.reason = view.pods.empty() ? "the Kubernetes Job is gone (deleted, or removed after it ended)"
                                     : "the Kubernetes Job is gone but its pods remain";
        return u;
    }
    const int ranks = std::max(1, view.expected_ranks);
    std::vector<PodInfo> pods;
    std::optional<std::int64_t> started;
    for (const json* pod : view.pods) {
        PodInfo p{pod, rank_of_pod(*pod), 0, detail::observe_pod(*pod, view.events)};
        p.created = detail::time_at(fields::at(*pod, "metadata", "creationTimestamp")).value_or(0);
        keep_min(started, p.obs.started_at);
        pods.push_back(std::move(p));
    }

    std::optional<Failure> failure;
    for (const json* job : view.jobs) {
        if (const json* c = condition(*job, "Failed")) {
            auto f = failure_of(*job, *c, pods);
            if (!failure || f.at.value_or(INT64_MAX) < failure->at.value_or(INT64_MAX)) {
                failure = std::move(f);
            }
        }
    }
    if (auto sweep = sweep_of_view(view)) {
        u = sweep_state(view, *sweep, pods, failure);
    } else if (failure) {
        u.state = JobState::failed;
        u.reason = ranked(ranks > 1, failure->rank, failure->reason);
        u.exit_code = failure->exit_code;
    } else if (all_ranks_complete(view, ranks)) {
        u.state = JobState::succeeded;
        u.reason = "exit code 0";
        u.exit_code = 0;
    } else {
        bool suspended = false;
        for (const json* job : view.jobs) {
            suspended = suspended || condition(*job, "Suspended") != nullptr;
        }
        u = suspended ? JobUpdate{JobState::pending, "the Job is suspended", {}, {}, {}}
                      : from_ranks(view, pods, ranks);
    }
    if (u.state == JobState::running || is_terminal(u.state)) {
        u.started_at = started;
    }
    u.recoveries = recoveries_of(view, pods, failure.has_value());
    if (is_terminal(u.state)) {
        u.ended_at = ended_at(view, pods);
        return u;
    }
    for (const json* job : view.jobs) {
        if (fields::at(*job, "metadata", "deletionTimestamp") != nullptr) {
            u.reason =
                u.reason.empty() ? "the Job is being deleted" : u.reason + "; the Job is being deleted";
            break;
        }
    }
    return u;
}

} // namespace tandem::k8s
