#pragma once
// How tandem marks the Kubernetes objects it creates, so status, logs and cancel find them by label
// selector in one request per namespace. Every Job, pod template, Service and Secret of a tandem job
// carries all of these labels (the rank only on per-rank Jobs and their pods).

#include <string>
#include <string_view>

namespace tandem::k8s {

// "app.kubernetes.io/managed-by=tandem": the selector that lists every tandem object of a namespace.
inline constexpr std::string_view k_managed_by_key = "app.kubernetes.io/managed-by";
inline constexpr std::string_view k_managed_by_value = "tandem";
// The tandem job's group name (the base Job name, also its remote_id): all ranks share it.
inline constexpr std::string_view k_job_label = "tandem.dev/job";
// tandem's own numeric job id, as text.
inline constexpr std::string_view k_id_label = "tandem.dev/id";
// The random submit token: tells a retried create (409 AlreadyExists) of our own Job from a clash.
inline constexpr std::string_view k_token_label = "tandem.dev/submit-token";
// Who launched the job (the cluster's notion of the user, made fit for a label value) and, for a group
// member, its group's submit token: what discovery selects on (issue 31).
inline constexpr std::string_view k_user_label = "tandem.dev/user";
inline constexpr std::string_view k_group_label = "tandem.dev/group";
// The job's whole identity (core/identity.hpp), on its Jobs.
inline constexpr std::string_view k_identity_annotation = "tandem.dev/identity";
// The exit codes of resources.job_recovery.recover_on_exit_codes ("3,4"), on the Jobs of a job that has
// them: status tells a failed pod restarted without counting from one counted against backoffLimit.
inline constexpr std::string_view k_recover_codes_annotation = "tandem.dev/recover-on-exit-codes";
// A sweep's size ("6"), on its Indexed Job: each completion index is one element (core/sweep.hpp), so
// status reads the pods as elements, not ranks, also for a job it did not launch.
inline constexpr std::string_view k_sweep_annotation = "tandem.dev/sweep-size";
// The node rank, on one-Job-per-rank submissions (servers without Indexed Jobs) and their pods.
inline constexpr std::string_view k_rank_label = "tandem.dev/rank";
// Indexed Jobs (1.21+) give each pod its index in this annotation (and env JOB_COMPLETION_INDEX).
inline constexpr std::string_view k_completion_index_annotation = "batch.kubernetes.io/job-completion-index";
// Pods of a Job: set by the Job controller on every version.
inline constexpr std::string_view k_job_name_label = "job-name";

// `text` as a label value: at most 63 of [A-Za-z0-9._-], starting and ending with a letter or digit (other
// bytes become '.'); "unknown" when nothing is left.
std::string label_value(std::string_view text);

} // namespace tandem::k8s
