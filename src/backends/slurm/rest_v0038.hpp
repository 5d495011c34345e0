#pragma once
// slurmrestd OpenAPI v0.0.38 (Slurm 22.05-23.11; Debian 12 ships 22.05.8). Facts checked against a real
// 22.05.8 server (tests/fixtures/slurm/v0.0.38, recorded from its transcript):
// - POST /slurm/v0.0.38/job/submit takes {"script", "job"}; job.environment is a JSON object and is
//   required ("environment must be set", 400). Unknown job keys are refused ("Unknown key", 400).
// - GPUs: "gres": "gpu:h100:2" is honoured (the job gets CUDA_VISIBLE_DEVICES=0,1 and reports
//   tres_per_node "gres:gpu:h100:2"); "gpus_per_node": "h100:2" is accepted too; "tres_per_node" is
//   refused as an unknown key.
// - "temporary_disk_per_node" (--tmp) is accepted although the schema does not list it.
// - slurmrestd does not read #SBATCH lines: the job object carries every option.
// - The rendered sbatch script (sbatch_script.hpp) was submitted with this payload on 2 cpu and 2 gpu
//   nodes: ranks, TANDEM_NODE_IPS, CUDA_VISIBLE_DEVICES, quoting and exit code 3 (768) all as intended.
// - job_state is one string; exit_code is the raw wait status (768 = exit 3, 15 = SIGTERM);
//   standard_output comes back unexpanded ("%j" stays).
// - GET /slurmdb/v0.0.38/job/{id}: state.current is right, but exit_code is {"status":"SUCCESS",
//   "return_code":0} for every job that exited, whatever its code (22.05 dumps WIFEXITED as success), and
//   comment.job is not the job's --comment. Take exit codes from /slurm/v0.0.38/job/{id} while slurmctld
//   still holds the job (MinJobAge), or from sacct.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"

namespace tandem::slurm::v0038 {

// The body of POST /slurm/v0.0.38/job/submit.
nlohmann::json submit_payload(const std::string& script, const SubmitPlan& plan);
// Slurm's job id, or errors[] as an error (kind `remote`).
Result<std::string> parse_submit_response(const nlohmann::json& body);
// GET /slurm/v0.0.38/jobs and /slurm/v0.0.38/job/{id}.
Result<std::vector<SlurmJob>> parse_jobs(const nlohmann::json& body);
// GET /slurmdb/v0.0.38/job/{id} and /slurmdb/v0.0.38/jobs (accounting).
Result<std::vector<SlurmJob>> parse_db_jobs(const nlohmann::json& body);
// GET /slurm/v0.0.38/partitions and /nodes.
Result<std::vector<SlurmPartition>> parse_partitions(const nlohmann::json& body);
Result<std::vector<SlurmNode>> parse_nodes(const nlohmann::json& body);

} // namespace tandem::slurm::v0038
