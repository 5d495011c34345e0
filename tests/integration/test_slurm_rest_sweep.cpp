// Sweeps (issue 33) over slurmrestd against the real testbeds: one job array submitted through the REST
// payload's `array`, its elements read back from GET /jobs (array_job_id, array_task_id, and the pending
// array_task_string), their output in logs, a failing element named, cancel of every element.

#include <functional>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "slurm_testbed.hpp"

using namespace tandem_test;

namespace {

std::string sweep_name(const std::string& prefix) {
    return prefix + "-" + std::to_string(::getpid());
}

} // namespace

TEST_CASE("sweep: a 3x2 grid is one job array over REST, and a failing element fails the sweep and is named",
          "[api]") {
    SlurmHome lab;
    auto file = lab.task(
        "grid", "name: " + sweep_name("rest-sweep") +
                    "\nconfig:\n  slurm:\n    partition: cpu\n"
                    "sweep:\n  lr: [\"0.1\", \"0.01\", \"it's 3\"]\n  bs: [16, 32]\n"
                    "sweep_parallel: 2\n"
                    "run: |\n  echo \"lr=$lr bs=$bs index=$TANDEM_SWEEP_INDEX of $TANDEM_SWEEP_SIZE\"\n"
                    "  if [ \"$TANDEM_SWEEP_INDEX\" = 5 ]; then exit 7; fi\n");
    auto r = lab.tandem({"launch", "--wait", file}, 180s);
    INFO(r);
    CHECK(r.exit_code == 7);
    CHECK(contains(r.err, "failed: #5 lr=it's 3 bs=32: exit code 7"));
    auto j = lab.job(1);
    INFO(j.dump());
    CHECK(j["state"] == "FAILED");
    CHECK(j["reason"] == "6 elements: 5 SUCCEEDED, 1 FAILED; failed: #5 lr=it's 3 bs=32: exit code 7");
    REQUIRE(j["elements"].size() == 6);
    for (int i = 0; i < 5; ++i) {
        CHECK(j["elements"][i]["state"] == "SUCCEEDED");
    }
    CHECK(j["elements"][5]["exit_code"] == 7);
    // One array of six tasks, as Slurm's own client lists it.
    const std::string id = j["remote_id"];
    auto q = slurm_command({"squeue", "-h", "-r", "-t", "all", "-j", id, "-o", "%i"});
    auto listed = split_lines(q.out);
    std::sort(listed.begin(), listed.end());
    if (listed.size() == 6) { // still in slurmctld (MinJobAge)
        CHECK(listed.front() == id + "_0");
        CHECK(listed.back() == id + "_5");
    }
    auto logs = lab.tandem({"logs", "1"});
    INFO(logs);
    CHECK(contains(logs.out, "[lr=0.1 bs=16] lr=0.1 bs=16 index=0 of 6\n"));
    CHECK(contains(logs.out, "[lr=it's 3 bs=32] lr=it's 3 bs=32 index=5 of 6\n"));
    auto one = lab.tandem({"logs", "1", "--element", "2"});
    CHECK(split_lines(one.out) == std::vector<std::string>{"lr=0.01 bs=16 index=2 of 6"});
}

TEST_CASE("sweep: cancel over REST ends every element, the pending ones too") {
    SlurmHome lab;
    auto file =
        lab.task("long", "name: " + sweep_name("rest-sweep-cancel") +
                             "\nconfig:\n  slurm:\n    partition: cpu\nsweep_parallel: 1\nrun: sleep 300\n");
    auto launched = lab.tandem({"launch", "-d", "--num-jobs", "3", file});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    const int id = std::stoi(launched.out);
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] { lab.tandem({"cancel", std::to_string(id)}); }};
    nlohmann::json j;
    for (int i = 0; i < 120; ++i) {
        j = lab.job(id);
        if (j["state"] == "RUNNING") {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    INFO(j.dump());
    REQUIRE(j["state"] == "RUNNING");
    CHECK(contains(j["reason"].get<std::string>(), "1 RUNNING, 2 PENDING"));
    // One pending element alone (DELETE /job/<array>_2): the rest go on, and Slurm agrees.
    auto one = lab.tandem({"cancel", std::to_string(id), "--element", "2"});
    INFO(one);
    REQUIRE(one.exit_code == 0);
    CHECK(contains(one.out, "element 2 (#2) cancelled"));
    j = lab.job(id);
    INFO(j.dump());
    CHECK(j["state"] == "RUNNING");
    CHECK(j["elements"][2]["state"] == "CANCELLED");
    CHECK(j["elements"][1]["state"] == "PENDING");
    REQUIRE(lab.tandem({"cancel", std::to_string(id)}).exit_code == 0);
    auto done = lab.wait_terminal(id, 60s);
    CHECK(done["state"] == "CANCELLED");
    const std::string remote = done["remote_id"];
    std::vector<std::string> left;
    for (int i = 0; i < 60; ++i) {
        left = split_lines(slurm_command({"squeue", "-h", "-r", "-j", remote, "-t",
                                          "PENDING,RUNNING,COMPLETING", "-o", "%i"})
                               .out);
        if (left.empty()) {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    CHECK(left.empty());
}
