// What tandem does while slurmrestd is down. These tests stop and start the testbed's slurmrestd, so they
// run alone (RUN_SERIAL), never beside another Slurm test.

#include <thread>

#include <catch2/catch.hpp>

#include "slurm_testbed.hpp"

using namespace tandem_test;

TEST_CASE("slurmrestd stopped: status shows UNKNOWN with the last known state, and exits 0 unless asked") {
    SlurmHome lab;
    auto file = lab.task("long", "name: long\nrun: sleep 120\n");
    auto launched = lab.tandem({"launch", "-d", file});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < 40 && j.value("state", "") != "RUNNING"; ++i) {
        j = lab.job(1);
        std::this_thread::sleep_for(250ms);
    }
    REQUIRE(j["state"] == "RUNNING");

    testbed({"stop-rest"});
    auto status = lab.tandem({"status"});
    auto as_json = lab.tandem({"status", "--json"});
    auto exit_code = lab.tandem({"status", "1", "--exit-code"});
    testbed({"start-rest"});

    INFO(status);
    CHECK(status.exit_code == 0);
    CHECK(contains(status.out, "UNKNOWN (was RUNNING"));
    auto parsed = nlohmann::json::parse(as_json.out);
    CHECK(parsed["jobs"][0]["state"] == "UNKNOWN");
    CHECK(parsed["jobs"][0]["last_known_state"] == "RUNNING");
    CHECK(parsed["jobs"][0]["state_age_seconds"].get<int>() >= 0);
    CHECK(contains(parsed["jobs"][0]["reason"].get<std::string>(), "lab"));
    CHECK(exit_code.exit_code == 104);

    // Back up: the job is seen again and can be cancelled.
    CHECK(lab.job(1)["state"] == "RUNNING");
    CHECK(lab.tandem({"cancel", "1"}).exit_code == 0);
}

// Recovery (issue 32): a node set DOWN under a running job with job_recovery. Slurm requeues it (--requeue)
// and runs it again elsewhere; no tandem process runs meanwhile. This takes a node down, so it runs alone
// like the rest of this file. Slurm holds a requeued batch job for about two minutes (its BeginTime); the
// test releases it sooner with `scontrol update StartTime=now`, as an operator may, once the killed
// attempt is gone.
TEST_CASE("recovery: a job whose node is set DOWN is requeued, succeeds, and reports the recovery") {
    SlurmHome lab;
    auto file = lab.task("survivor", "name: survivor\nconfig:\n  slurm:\n    partition: cpu\n"
                                     "resources:\n  job_recovery: {max_restarts_on_errors: 0}\n"
                                     "run: |\n  echo \"on $SLURMD_NODENAME restart=${SLURM_RESTART_COUNT:-0}\"\n"
                                     "  sleep 8\n  echo finished\n");
    auto launched = lab.tandem({"launch", "-d", file});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < 80 && j.value("state", "") != "RUNNING"; ++i) {
        j = lab.job(1);
        std::this_thread::sleep_for(250ms);
    }
    REQUIRE(j["state"] == "RUNNING");
    const std::string remote = j["remote_id"].get<std::string>();
    auto show = slurm_command({"scontrol", "show", "job", remote});
    const auto at = show.out.find(" NodeList=");
    REQUIRE(at != std::string::npos);
    const std::string node = show.out.substr(at + 10, show.out.find_first_of(" \n", at + 10) - (at + 10));
    INFO("node " << node);
    REQUIRE(node.rfind("cpu", 0) == 0);
    struct Resume {
        std::string node;
        ~Resume() {
            if (slurm_command({"scontrol", "update", "nodename=" + node, "state=resume"}).exit_code != 0) {
                slurm_command({"scontrol", "update", "nodename=" + node, "state=idle"});
            }
        }
    } resume{node};
    auto down = slurm_command({"scontrol", "update", "nodename=" + node, "state=down", "reason=tandem-recovery-test"});
    INFO(down);
    REQUIRE(down.exit_code == 0);
    // Requeued: pending again (Slurm's own requeue, counted in its Restarts).
    bool requeued = false;
    for (int i = 0; i < 60 && !requeued; ++i) {
        auto s = slurm_command({"scontrol", "show", "job", remote});
        requeued = contains(s.out, "Restarts=1") && contains(s.out, "JobState=PENDING");
        std::this_thread::sleep_for(250ms);
    }
    REQUIRE(requeued);
    // tandem says so while Slurm holds it (slurmrestd's restart_cnt).
    j = lab.job(1);
    CHECK(j["state"] == "PENDING");
    CHECK(contains(j["reason"].get<std::string>(), "requeued, restart 1: "));
    // The node comes back (as after a reboot); then the requeued job is released from its BeginTime.
    if (slurm_command({"scontrol", "update", "nodename=" + node, "state=resume"}).exit_code != 0) {
        slurm_command({"scontrol", "update", "nodename=" + node, "state=idle"});
    }
    for (int i = 0; i < 40; ++i) {
        auto state = slurm_command({"sinfo", "-h", "-n", node, "-o", "%T"});
        if (contains(state.out, "idle")) {
            break;
        }
        std::this_thread::sleep_for(250ms);
    }
    // The killed attempt's step takes up to KillWait (the testbed's 5 s, plus its epilog) to be gone;
    // a job released before that fails to launch and is held (launch_failed_requeued_held): Slurm's own
    // two-minute BeginTime exists for this.
    std::this_thread::sleep_for(12s);
    slurm_command({"scontrol", "update", "jobid=" + remote, "StartTime=now"});
    j = lab.wait_terminal(1, 120s);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["recoveries"] == 1);
    CHECK(j["recovered_attempts"][0]["reason"] == "node failure, requeued");
    CHECK(j["recovered_attempts"][0]["counted"] == false);
    auto logs = lab.tandem({"logs", "1"});
    INFO(logs);
    CHECK(contains(logs.out, "restart=0"));
    CHECK(contains(logs.out, "the job was requeued (node failure or preemption), running again"));
    CHECK(contains(logs.out, "restart=1"));
    CHECK(contains(logs.out, "finished"));
}
