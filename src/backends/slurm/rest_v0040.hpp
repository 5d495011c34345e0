#pragma once
// slurmrestd OpenAPI v0.0.40 (Slurm 23.11), v0.0.41 (24.05) and v0.0.42 (24.11), which share these shapes
// (docs/SLURM_VERSIONS.md has what differs):
// - submit: job.environment is an array of "K=V"; GPUs go in "tres_per_node": "gres/gpu:h100:8";
//   time_limit and memory_per_node are {"set", "infinite", "number"}; node counts are minimum_nodes and
//   maximum_nodes. v0.0.40 takes the script at the top level; v0.0.41 wants it in job.script (the
//   top-level one is deprecated there).
// - job_info: job_state is an array, base state first, then flags (["RUNNING","COMPLETING"]); exit_code
//   is decoded: {"status": ["SUCCESS"|"ERROR"|"SIGNALED"|...], "return_code": N, "signal": {"id", "name"}};
//   times and most numbers are {set, infinite, number}.
// - slurmdb job: state.current is an array too, exit_code has the same decoded shape.
// - partition_info: nodes.configured is the hostlist, maximums.time the limit, partition.state the
//   state array. The schema has no "default partition" marker; a "flags" array with DEFAULT is read if a
//   server sends one.
// The fixtures (tests/fixtures/slurm/v0.0.40, v0.0.41, v0.0.42) are recorded from a real Slurm 24.11.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/slurm/api_version.hpp"
#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"

namespace tandem::slurm::v0040 {

// The body of POST /slurm/<version>/job/submit; `version` is v0_0_40, v0_0_41 or v0_0_42.
nlohmann::json submit_payload(const std::string& script, const SubmitPlan& plan, ApiVersion version);
Result<std::string> parse_submit_response(const nlohmann::json& body);
// GET /slurm/<version>/jobs and /job/{id}.
Result<std::vector<SlurmJob>> parse_jobs(const nlohmann::json& body);
// GET /slurmdb/<version>/job/{id} and /jobs.
Result<std::vector<SlurmJob>> parse_db_jobs(const nlohmann::json& body);
Result<std::vector<SlurmPartition>> parse_partitions(const nlohmann::json& body);
Result<std::vector<SlurmNode>> parse_nodes(const nlohmann::json& body);
// DELETE /slurm/<version>/job/{id}: v0.0.42 answers HTTP 200 and lists per job, in status[], an error
// the signal met ({"error": {"code", "message"}}). Invalid job id (2017) and already done (2021) mean
// the job has ended: not a refusal. Anything else is, as one line; nullopt when nothing refused.
std::optional<std::string> cancel_refusal(const nlohmann::json& body);

} // namespace tandem::slurm::v0040
