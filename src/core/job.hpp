#pragma once
// A job as tandem tracks it, whatever runs it. Times are Unix seconds (UTC).

#include <cstdint>
#include <optional>
#include <string>

#include "core/job_state.hpp"

namespace tandem {

struct JobRecord {
    std::int64_t id = 0; // tandem's own small integer id
    std::string name;
    std::string cluster;   // configured cluster name ("local", "slurm-a")
    std::string backend;   // backend kind ("local", "slurm", "k8s")
    std::string remote_id; // the backend's id (pid, Slurm job id, Job name); empty until submitted
    JobState state = JobState::pending;
    std::string reason; // "Resources", "exit code 3", "OOMKilled", ...
    std::optional<int> exit_code;
    std::int64_t submitted_at = 0;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> ended_at;
    std::int64_t updated_at = 0; // when state was last confirmed by the backend
    std::string spec_json;       // the spec with secrets removed
    std::string placement_json;  // the chosen placement
    std::string gpus;            // "H100:8" for the table; empty when none
    int num_nodes = 1;
    // Pipelines and job groups: the group is a row of its own (backend "group", no remote id) and each
    // member a row pointing at it, with its name in the group.
    std::optional<std::int64_t> parent_id;
    std::string member;
    // Drawn by launch before the submit and handed to the backend, which marks the job with it (Slurm: the
    // comment; Kubernetes: a label). A launch killed before it stored the remote id is found by it.
    std::string submit_token;
    // How the job recovered so far (core/job_recovery.hpp): "x3,n" = a restart after exit code 3, then a
    // requeue after a node failure. Empty: never.
    std::string recoveries;
    // A sweep (core/sweep.hpp): each element's state and exit code, "S0,R,F3,P". Empty: not a sweep, or
    // not yet seen.
    std::string elements;

    bool is_group() const { return backend == k_group_backend; }
    static constexpr const char* k_group_backend = "group";
};

// A state change reported by a backend refresh. UNKNOWN means "could not tell": the store keeps the last
// known state and the CLI shows its age.
struct JobUpdate {
    JobState state = JobState::unknown;
    std::string reason;
    std::optional<int> exit_code;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> ended_at;
    std::optional<std::string> recoveries = std::nullopt; // what the cluster says of the job's recoveries; nullopt: nothing
    std::optional<std::string> elements =
        std::nullopt; // a sweep's elements (JobRecord::elements); nullopt: not a sweep
};

} // namespace tandem
