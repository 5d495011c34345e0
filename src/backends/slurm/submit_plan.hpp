#pragma once
// The transport-independent part of a Slurm submit: spec + placement + the chosen partition's facts ->
// SubmitPlan (nodes, GPUs, CPUs, memory, tmp disk, time limit, account/qos/constraint, the job name and
// the environment). Where the job runs and where its output goes are the caller's: they depend on the
// transport (a shared path for REST, an uploaded workdir over SSH).

#include <cstdint>
#include <string>
#include <string_view>

#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"
#include "core/inventory.hpp"

namespace tandem::slurm {

// "tandem-<16 hex digits>", from the system's random device: written to the job's comment.
std::string random_submit_token();

// A job's comment: its submit token, then its identity (core/identity.hpp), then, for a group member reached
// over slurmrestd alone, the group's address book, each a word of its own:
//   tandem-ab12cd34ef tandem:1:t=ab12cd34ef;n=train;u=alice;... tandem-hosts=<base64>
// (tandem before issue 31 wrote the token alone, or the token and ";tandem-hosts=...").
inline std::string job_comment(const SubmitPlan& plan) {
    return plan.identity.empty() ? plan.submit_token : plan.submit_token + " " + plan.identity;
}

inline bool comment_has_token(std::string_view comment, std::string_view token) {
    return !token.empty() && comment.substr(0, token.size()) == token &&
           (comment.size() == token.size() || comment[token.size()] == ';' || comment[token.size()] == ' ');
}

// The time limit is config.slurm.time when the task sets one; otherwise none is asked and Slurm applies
// the partition's own (DefaultTime, else MaxTime), as for a plain sbatch. environment = envs, then secrets
// (the script leaves secrets out; the transport passes them).
// `token`: the launch's submit token (JobRecord::submit_token), written as "tandem-<token>"; empty draws one.
Result<SubmitPlan> build_submit_plan(const TaskSpec& spec, const Placement& placement, const Pool& pool,
                                     std::int64_t job_id, const std::string& token = {});

// The limit Slurm applies to a job that asks for none on `pool`, in words ("the partition's DefaultTime,
// 1:00:00"), for `plan`.
std::string applied_time_limit(const Pool& pool);

} // namespace tandem::slurm
