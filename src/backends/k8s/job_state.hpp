#pragma once
// Kubernetes Jobs, pods and events -> tandem's state model (pure: no I/O). `status` lists every tandem Job
// and every tandem pod of a namespace once each (label selector app.kubernetes.io/managed-by=tandem), and
// optionally the namespace's events, then groups them per tandem job and maps each group.
//
// One tandem job is the Jobs sharing a tandem.dev/job label: one Job (num_nodes 1), one Indexed Job
// (1.21+), or one single-pod Job per rank (older servers; label tandem.dev/rank). A pod's rank is its
// tandem.dev/rank label, else its batch.kubernetes.io/job-completion-index annotation, else 0.
//
// Decisions (see job_state.cpp for the whole table):
// - Terminal states come only from Job conditions (Complete, Failed), never from pod phases alone: with
//   backoffLimit > 0 a failed pod is retried, and only the Job controller knows when it gives up. The
//   pods only explain the ending (which rank, which exit code, OOMKilled).
// - No Job listed (view.jobs empty): UNKNOWN with a reason. The Job was deleted (cancel, TTL, by hand);
//   the caller decides what that means (it knows whether it cancelled). The store ignores UNKNOWN.
// - A Job being deleted (deletionTimestamp) is reported as what is seen, with "; Job is being deleted"
//   appended to the reason: CANCELLED is recorded by the cancel command, not inferred here.
// - Image pull failures, CreateContainerConfigError (e.g. a missing Secret) and the like keep the job
//   PENDING (Kubernetes keeps retrying) with the reason shown; a scheduled pod whose containers are being
//   created is STARTING.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job.hpp"
#include "core/sweep.hpp"

namespace tandem::k8s {

// One tandem job = the Jobs sharing a tandem.dev/job label (1 Job; or 1 Indexed Job; or N per-rank Jobs)
// and their pods. `expected_ranks` = num_nodes. The pointers point into the lists given to
// group_by_tandem_job, which must outlive the view.
struct JobView {
    std::vector<const nlohmann::json*> jobs;
    std::vector<const nlohmann::json*> pods;
    std::vector<const nlohmann::json*> events;
    int expected_ranks = 1;
    // The Job list was not read because the pods alone decide the state (pods_decide() was true): an
    // empty `jobs` then means "not read", not "gone".
    bool jobs_unread = false;
    // The job's sweep (from its record): each completion index is an element. Without it, a Job with the
    // tandem.dev/sweep-size annotation is still read as a sweep, its elements named by index.
    std::optional<Sweep> sweep;
};

// What the record adds to a view: num_nodes (the only way to notice a missing rank Job) and the sweep.
void add_record(JobView& view, const JobRecord& job);

// Groups a Job list and a pod list (and optional event list) of one namespace by tandem.dev/job.
// Objects without the label are skipped. Events are matched by involvedObject (a Job or pod of the
// group). expected_ranks is what the objects say: an Indexed Job's spec.completions, else the number
// of per-rank Jobs (at least 1); the caller should overwrite it with the record's num_nodes, which is
// the only way to notice a rank Job that is missing.
std::map<std::string, JobView> group_by_tandem_job(const nlohmann::json& job_list,
                                                   const nlohmann::json& pod_list,
                                                   const nlohmann::json* event_list);

// The tandem state of one job. Reasons use Kubernetes' words ("ImagePullBackOff: ...", "OOMKilled",
// "DeadlineExceeded", the scheduler's message) and, for multi-rank jobs, name the rank ("rank 1: exit
// code 3"). started_at: the earliest container start; ended_at: the Job's completionTime, else the
// latest container finishedAt, else when the Failed condition was set.
JobUpdate to_job_update(const JobView& view);

// True when the pods alone decide the job's state, so `status` may skip listing the Jobs: every rank has
// a pod, and every pod is Pending or Running and not being deleted. Anything that may be an ending (a
// pod that ended or is deleted, a rank without a pod, a suspended Job) needs the Job's conditions.
// A sweep's state needs its Job (its conditions, failedIndexes): never the pods alone.
bool pods_decide(const JobView& view);

// RFC 3339 ("2026-12-02T16:22:21Z", "...T16:22:21.123456Z", "...T18:22:21+02:00") -> Unix seconds.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

} // namespace tandem::k8s
