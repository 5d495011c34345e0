#pragma once
// Integration tests against the real Slurm testbed (scripts/testbed/slurm). The testbed must be up; when
// it is not, every test fails with how to start it: a missing prerequisite is a failure, never a skip.

#include <map>
#include <string>

#include "../cli/run_tandem.hpp"

namespace tandem_test {

// KEY=VALUE lines of `scripts/testbed/slurm env`, read once.
const std::map<std::string, std::string>& slurm_env();
std::string testbed_script(); // path of scripts/testbed/slurm

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
