#pragma once
// slurmrestd's job, partition and node bodies, one mapper per body for every OpenAPI version tandem
// speaks; the version is the dialect. Facts checked against real servers (tests/fixtures/slurm/<version>,
// recorded from Slurm 22.05.8 and 24.11):
//
// v0.0.38 (Slurm 22.05-23.11; Debian 12 ships 22.05.8):
// - POST /slurm/v0.0.38/job/submit takes {"script", "job"}; job.environment is a JSON object and is
//   required ("environment must be set", 400). Unknown job keys are refused ("Unknown key", 400).
// - GPUs: "gres": "gpu:h100:2" is honoured (the job gets CUDA_VISIBLE_DEVICES=0,1 and reports
//   tres_per_node "gres:gpu:h100:2"); "tres_per_node" is refused as an unknown key.
// - "temporary_disk_per_node" (--tmp) is accepted although the schema does not list it.
// - slurmrestd does not read #SBATCH lines: the job object carries every option.
// - job_state is one string; exit_code is the raw wait status (768 = exit 3, 15 = SIGTERM);
//   standard_output comes back unexpanded ("%j" stays).
// - GET /slurmdb/v0.0.38/job/{id}: state.current is right, but exit_code is {"status":"SUCCESS",
//   "return_code":0} for every job that exited, whatever its code (22.05 dumps WIFEXITED as success), and
//   comment.job is not the job's --comment. Take exit codes from /slurm/v0.0.38/job/{id} while slurmctld
//   still holds the job (MinJobAge), or from sacct.
//
// v0.0.40 (Slurm 23.11), v0.0.41 (24.05) and v0.0.42 (24.11) share their shapes (docs/SLURM_VERSIONS.md
// has what differs):
// - submit: job.environment is an array of "K=V"; GPUs go in "tres_per_node": "gres/gpu:h100:8";
//   time_limit and memory_per_node are {"set", "infinite", "number"}; node counts are minimum_nodes and
//   maximum_nodes. v0.0.40 takes the script at the top level; v0.0.41 wants it in job.script (the
//   top-level one is deprecated there, and v0.0.42 drops it).
// - job_info: job_state is an array, base state first, then flags (["RUNNING","COMPLETING"]); exit_code
//   is decoded: {"status": ["SUCCESS"|"ERROR"|"SIGNALED"|...], "return_code": N, "signal": {"id", "name"}};
//   times and most numbers are {set, infinite, number}. A plain job_state string and a plain exit_code
//   number are read as v0.0.38's, so one reader serves every version.
// - slurmdb job: state.current is an array too, exit_code has the same decoded shape.
// - partition_info: nodes.configured is the hostlist, maximums.time the limit, partition.state the
//   state array. The schema has no "default partition" marker; a "flags" array with DEFAULT is read if a
//   server sends one.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/slurm/api_version.hpp"
#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"

namespace tandem::slurm::api {

// The body of POST /slurm/<version>/job/submit.
nlohmann::json submit_payload(const std::string& script, const SubmitPlan& plan, ApiVersion version);
// Slurm's job id, or errors[] as a refusal (kind `remote`).
Result<std::string> parse_submit_response(const nlohmann::json& body, ApiVersion version);
// GET /slurm/<version>/jobs and /job/{id}.
Result<std::vector<SlurmJob>> parse_jobs(const nlohmann::json& body, ApiVersion version);
// GET /slurmdb/<version>/job/{id} and /jobs (accounting).
Result<std::vector<SlurmJob>> parse_db_jobs(const nlohmann::json& body, ApiVersion version);
// GET /slurm/<version>/partitions and /nodes.
Result<std::vector<SlurmPartition>> parse_partitions(const nlohmann::json& body, ApiVersion version);
Result<std::vector<SlurmNode>> parse_nodes(const nlohmann::json& body, ApiVersion version);
// DELETE /slurm/<version>/job/{id}: v0.0.42 answers HTTP 200 and lists per job, in status[], an error
// the signal met ({"error": {"code", "message"}}). Invalid job id (2017) and already done (2021) mean
// the job has ended: not a refusal. Anything else is, as one line; nullopt when nothing refused.
std::optional<std::string> cancel_refusal(const nlohmann::json& body);

} // namespace tandem::slurm::api
