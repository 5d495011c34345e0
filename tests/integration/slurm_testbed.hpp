#pragma once
// Integration tests against the real Slurm testbed (scripts/testbed/slurm). The testbed must be up; when
// it is not, every test fails with how to start it: a missing prerequisite is a failure, never a skip.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../cli/run_tandem.hpp"

namespace tandem_test {

// The suites run against either real Slurm: TANDEM_TEST_SLURM=slurm24 picks scripts/testbed/slurm24
// (Slurm 24.11), anything else scripts/testbed/slurm (22.05). TANDEM_TEST_SLURM_API pins the REST API
// version the clusters of SlurmHome speak (rest.api_version); unset, tandem picks. CTest registers the
// suites once per combination (tests/CMakeLists.txt).

// KEY=VALUE lines of `scripts/testbed/<testbed> env`, read once.
const std::map<std::string, std::string>& slurm_env();
std::string testbed_script(); // path of scripts/testbed/slurm or slurm24
bool testbed_is_24();
std::string slurm_release(); // "22.05" or "24.11"
// The testbed keeps accounting (slurmdbd: sacct, /slurmdb): 22.05 does, 24.11 has no slurmdbd.
bool slurm_accounting();
// The REST API version tandem speaks to the testbed: the pinned one, else the newest the testbed serves.
std::string slurm_rest_api();
// Every job called `name` slurmctld took in the last hour, as (job id, state), ordered by id: from
// accounting (sacct) where the testbed has it, else from squeue plus the job completion log.
std::vector<std::pair<std::string, std::string>> slurm_jobs_named(const std::string& name);

// Config lines every test's REST cluster carries: the pinned API version (under `rest:`, 6 spaces) and,
// on 24.11 (slurmrestd v0.0.40+ does not say it), the default partition (cluster level, 4 spaces).
std::string rest_api_pin_line();
std::string default_partition_line();
// Runs a Slurm client command (squeue, scontrol, sacct, ...) as root against the testbed: the host's
// own clients for 22.05, the chroot's for 24.11 (a 22.05 client cannot talk to a 24.11 slurmctld).
RunResult slurm_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = 30s);

// A TempHome whose config has one slurm cluster `lab` (REST, token from $SLURM_JWT) and the environment
// tandem needs to reach it.
struct SlurmHome {
    TempHome home;
    RunOptions options; // env with SLURM_JWT
    explicit SlurmHome(const std::string& token = "", const std::string& url = "");
    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const;
    // Polls status until terminal or `limit`; returns the job JSON.
    nlohmann::json wait_terminal(int id, std::chrono::milliseconds limit = 90s) const;
    nlohmann::json job(int id) const;
    std::string task(const std::string& name, const std::string& yaml) const; // writes a task file
};

// Runs the testbed script with `args` (e.g. {"stop-rest"}); fails the test if it fails.
void testbed(const std::vector<std::string>& args);

} // namespace tandem_test
