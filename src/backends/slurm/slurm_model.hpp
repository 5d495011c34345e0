#pragma once
// Slurm as the adapter sees it, independent of the transport (slurmrestd or the CLI over SSH) and of the
// OpenAPI version. The pure mappers turn these into sbatch scripts and REST payloads, and turn REST JSON
// (or squeue/sacct text) back into them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "core/planner.hpp"
#include "core/spec.hpp"

namespace tandem::slurm {

// What the sbatch script and the submit payload are made from: the spec and placement, resolved.
// A file mount's content, unpacked on the cluster (`source`), and where the job script copies it on every
// node before setup (`destination` as the task wrote it: absolute, `~/...`, or relative to the home).
struct MountCopy {
    std::string source;
    std::string destination;
    bool single_file = false;
};

struct SubmitPlan {
    std::int64_t tandem_id = 0;
    std::string submit_token; // random, written to the job's comment: finds a submit that was retried
    std::string identity;     // the job's identity (core/identity.hpp), after the token in the comment
    std::string job_name;     // spec name
    std::string partition;    // placement pool
    int nodes = 1;
    int gpus_per_node = 0; // 0: no gres
    std::string gres_type; // "h100" (lower case, as Slurm's gres names are)
    std::optional<int> cpus_per_task;
    std::optional<int> memory_mb_per_node;
    std::optional<int> tmp_disk_mb;
    // config.slurm.time. nullopt: none is asked, so Slurm applies the partition's DefaultTime, else its
    // MaxTime (UNLIMITED on a stock partition), exactly as for a plain sbatch.
    std::optional<int> time_limit_minutes;
    std::string time_limit_note; // which limit applies when none is asked, for the script's comment
    std::optional<std::string> account, qos, constraint;
    // config.slurm.sbatch_options beyond the ones folded into the fields above: (name, value), each an
    // `#SBATCH --name=value` line (a bare `--name` when value is empty).
    std::vector<std::pair<std::string, std::string>> extra_options;
    std::string working_directory; // where the job runs (workdir, else the submitting user's home)
    std::string output_pattern;    // stdout/stderr file pattern, e.g. /home/u/.tandem/jobs/%j.out
    std::vector<std::pair<std::string, std::string>> environment; // envs + secrets + TANDEM_* basics
    // A job group member on a cluster tandem reaches only through slurmrestd: its address book arrives
    // in the job's comment (see group_channel.hpp), which each node reads with scontrol.
    bool group_book_in_comment = false;
    std::vector<MountCopy> file_mounts;
    // resources.job_recovery (not `none`): --requeue on node failure, user-code failures run again inside
    // the allocation (sbatch_script.hpp).
    std::optional<JobRecovery> recovery;
    // A sweep (core/sweep.hpp): one job array, --array=0-(N-1)[%P], each element's values chosen in the
    // script by SLURM_ARRAY_TASK_ID; the output pattern then names each element's file (%A_%a).
    std::optional<Sweep> sweep;
};

struct SlurmJob {
    std::string job_id; // Slurm's numeric id, as text
    std::string name;
    std::string state;                    // base state: "PENDING", "RUNNING", "COMPLETED", "TIMEOUT", ...
    std::vector<std::string> state_flags; // v0.0.40+: the rest of job_state, e.g. {"COMPLETING"}; v0.0.38
                                          // has one string, which may itself be a flag ("COMPLETING")
    std::string state_reason;             // "None", "Resources", "Priority", ...
    std::optional<int> exit_code;         // the batch script's exit status
    std::optional<int> signal;            // the signal that ended it, if any
    std::optional<std::int64_t> start_time, end_time; // Unix seconds; absent when 0 or unset
    std::string nodes;                                // "gpu[1-2]"
    std::string comment;                              // tandem's submit token and identity
    std::string user;                                 // the job's user (discovery reads it)
    std::optional<std::int64_t> submit_time;
    int node_count = 0;                               // 0: not reported
    int restarts = 0;                                 // Slurm's requeue count (REST restart_cnt; 0 over SSH)
    std::string standard_output;                      // the resolved output path when Slurm reports it
    // A job array's element (a sweep, issue 33): job_id is the array's id ("123" of "123_4") and
    // array_task the element's index. array_pending: the elements not yet started, when Slurm lists them
    // as one line ("0-5%2" of "123_[0-5%2]"). Neither: not an array.
    std::optional<int> array_task;
    std::string array_pending;
};

// What discovery (issue 31) reads from one list call: who the caller is, the caller's jobs, and (asked
// for every user) everyone's.
struct SlurmListing {
    std::string me;
    std::vector<SlurmJob> mine, everyone;
    std::size_t unreadable = 0; // lines of the wrong shape (a comment with a line break)
};

struct SlurmPartition {
    std::string name;
    std::vector<std::string> nodes;      // expanded host names
    std::optional<int> max_time_minutes;     // nullopt: UNLIMITED
    std::optional<int> default_time_minutes; // DefaultTime; nullopt: none (MaxTime applies)
    bool is_default = false;
    std::string state; // "UP", "DOWN", "DRAIN", "INACTIVE"; empty when not reported
};

struct SlurmNode {
    std::string name;
    std::string state; // "idle", "mixed", "allocated", "down", "drain"... (lower case)
    int cpus = 0;
    int alloc_cpus = 0;
    double real_memory_mb = 0;
    std::string gres;      // "gpu:h100:8"
    std::string gres_used; // "gpu:h100:2(IDX:0-1)"
    std::vector<std::string> partitions;
};

// Slurm's state + reason + exit code -> tandem's state model (the table is in state_mapping.cpp).
// started_at/ended_at are taken only once they are facts: Slurm reports an expected start for pending
// jobs and an expected end for running ones. ended_at stays empty when Slurm gave none.
// The comment word a job with resources.job_recovery keeps its recoveries in (core/job_recovery.hpp).
inline constexpr std::string_view k_recovered_marker = "tandem-recovered=";
JobUpdate to_job_update(const SlurmJob& job);

// A job slurmctld no longer lists (it purges ended jobs after MinJobAge) and accounting cannot answer
// for: UNKNOWN, saying whether the cluster keeps accounting at all (no slurmdbd: how it ended is lost).
JobUpdate left_slurmctld(const std::string& slurm_id, bool cluster_has_accounting);

} // namespace tandem::slurm
