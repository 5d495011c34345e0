// Slurm over SSH against the real testbed (scripts/testbed/slurm): the real `tandem` binary with an `ssh:`
// cluster, real sbatch/squeue/sacct/scancel on the login node (sshd on 127.0.0.1:2222), files over SFTP.

#include <functional>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_slurm_ssh_support.hpp"

using namespace tandem_test;

TEST_CASE("ssh: check and infra read the cluster through sinfo") {
    SshLab lab;
    auto check = lab.tandem({"check"});
    INFO(check);
    REQUIRE(check.exit_code == 0);
    CHECK(contains(check.out, "Slurm " + slurm_release()));
    CHECK(contains(check.out, "over SSH"));
    auto infra = lab.tandem({"infra", "--json"});
    INFO(infra);
    REQUIRE(infra.exit_code == 0);
    auto j = nlohmann::json::parse(infra.out);
    auto pools = j["clusters"][0]["pools"];
    REQUIRE(pools.size() == 3);
    CHECK(pools[1]["name"] == "gpu");
    CHECK(pools[1]["gpus_total"] == 16);
    CHECK(pools[0]["is_default"] == true);
    CHECK(pools[2]["name"] == "batch"); // set up the stock way: no MaxTime, no DefaultTime
    CHECK(pools[2]["max_time_minutes"].is_null());
    CHECK(pools[2]["default_time_minutes"].is_null());
}

TEST_CASE("ssh: a CPU job runs, its output is followed and readable, and it ends SUCCEEDED") {
    SshLab lab;
    auto file = lab.task("cpu", "name: ssh-cpu\nenvs:\n  QUOTED: \"it's $HOME \\\"x\\\"\"\n"
                                "run: |\n  echo \"rank=$TANDEM_NODE_RANK nodes=$TANDEM_NUM_NODES\"\n"
                                "  echo \"quoted=$QUOTED\"\n  echo \"partition=$SLURM_JOB_PARTITION\"\n");
    auto r = lab.tandem({"launch", file, "--infra", "slurm"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "rank=0 nodes=1\n")); // one node: no rank prefix
    CHECK(contains(r.out, "quoted=it's $HOME \"x\""));
    CHECK(contains(r.out, "partition=cpu"));
    auto j = lab.job(1);
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["exit_code"] == 0);
    auto logs = lab.tandem({"logs", "1"});
    CHECK(logs.exit_code == 0);
    CHECK(contains(logs.out, "quoted=it's $HOME \"x\""));
    auto tail = lab.tandem({"logs", "1", "--tail", "1"});
    CHECK(split_lines(tail.out) == std::vector<std::string>{"partition=cpu"});
}

TEST_CASE("ssh: a job exiting 3 ends FAILED with exit code 3") {
    SshLab lab;
    auto file = lab.task("three", "name: ssh-three\nrun: echo before; exit 3\n");
    auto r = lab.tandem({"launch", "--wait", file});
    INFO(r);
    CHECK(r.exit_code == 3);
    auto j = lab.job(1);
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 3);
    CHECK(lab.tandem({"status", "1", "--exit-code"}).exit_code == 3);
}

TEST_CASE("ssh: a 2-node job shows both ranks, prefixed, and --node 1 shows one") {
    SshLab lab;
    auto file = lab.task("two", "name: ssh-two\nnum_nodes: 2\nconfig:\n  slurm:\n    partition: cpu\n"
                                "run: echo \"hello from $SLURMD_NODENAME rank=$TANDEM_NODE_RANK "
                                "ips=[$(echo $SKYPILOT_NODE_IPS)]\"\n");
    auto r = lab.tandem({"launch", "--wait", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto all = lab.tandem({"logs", "1"});
    INFO(all);
    CHECK(contains(all.out, "[rank 0] hello from cpu1 rank=0"));
    CHECK(contains(all.out, "[rank 1] hello from cpu2 rank=1"));
    // The nodes' addresses as slurmctld has them (NodeAddr), not their names (issue 34).
    std::string addrs;
    for (const char* node : {"cpu1", "cpu2"}) {
        const auto shown = slurm_command({"scontrol", "-o", "show", "node", node}).out;
        const auto at = shown.find("NodeAddr=");
        REQUIRE(at != std::string::npos);
        addrs += (addrs.empty() ? "" : " ") + shown.substr(at + 9, shown.find(' ', at) - at - 9);
    }
    CHECK(addrs.find("cpu") == std::string::npos);
    CHECK(contains(all.out, "rank=0 ips=[" + addrs + "]"));
    CHECK(contains(all.out, "rank=1 ips=[" + addrs + "]"));
    auto one = lab.tandem({"logs", "1", "--node", "1"});
    INFO(one);
    CHECK(split_lines(one.out) == std::vector<std::string>{"hello from cpu2 rank=1 ips=[" + addrs + "]"});
}

TEST_CASE("ssh: cancel of a running and of a pending job, both end CANCELLED") {
    SshLab lab;
    auto file =
        lab.task("hog", "name: ssh-hog\nnum_nodes: 2\nresources:\n  accelerators: H100:8\nrun: sleep 300\n");
    const int running = launched_id(lab.tandem({"launch", "-d", file}));
    const int pending = launched_id(lab.tandem({"launch", "-d", file}));
    // Whatever fails below, the two jobs do not go on holding every GPU node for the tests after this one
    // (a cancel of jobs that have ended is harmless).
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] { lab.tandem({"cancel", std::to_string(running), std::to_string(pending)}); }};
    nlohmann::json first, second;
    for (int i = 0; i < 180; ++i) { // nodes an earlier test's job held may still be completing
        first = lab.job(running);
        second = lab.job(pending);
        if (first["state"] == "RUNNING" && second["state"] == "PENDING") {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    REQUIRE(first["state"] == "RUNNING");
    REQUIRE(second["state"] == "PENDING");
    CHECK_FALSE(second["reason"].get<std::string>().empty());
    auto c = lab.tandem({"cancel", std::to_string(running), std::to_string(pending)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    CHECK(lab.wait_terminal(running, 30s)["state"] == "CANCELLED");
    CHECK(lab.wait_terminal(pending, 30s)["state"] == "CANCELLED");
}

TEST_CASE("ssh: logs -f follows a running job, new lines within a second, then the final state") {
    SshLab lab;
    const std::string go = slurm_env().at("SLURM_USER_HOME") + "/tandem-go-" + std::to_string(::getpid());
    ::unlink(go.c_str());
    auto file = lab.task("follow", "name: ssh-follow\nrun: |\n  echo first\n  while [ ! -e " + go +
                                       " ]; do sleep 0.1; done\n  echo second\n  sleep 1\n  echo third\n");
    const int id = launched_id(lab.tandem({"launch", "-d", file}));
    StreamingTandem follow(lab, {"logs", std::to_string(id), "-f"}); // maybe before the file exists
    auto first = follow.wait_line("first", 60s);
    INFO(follow.all_err());
    REQUIRE(first);
    std::this_thread::sleep_for(1s);
    const auto released = std::chrono::steady_clock::now();
    std::ofstream(go) << "go\n"; // the job sees it within 0.1 s
    auto second = follow.wait_line("second", 10s);
    REQUIRE(second);
    const auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(second->at - released);
    INFO("second line arrived after " << delay.count() << " ms");
    CHECK(delay < 1500ms); // 0.1 s job poll + 0.5 s follow poll + SFTP; loaded CI boxes add some
    const int code = follow.wait_exit(30s);
    CHECK(code == 0);
    CHECK(contains(follow.all_out(), "third"));
    CHECK(contains(follow.all_err(), "SUCCEEDED"));
    ::unlink(go.c_str());
}

TEST_CASE("ssh: status of a job that left slurmctld comes from sacct, or says there is no accounting") {
    SshLab lab;
    const int min_job_age = std::stoi(slurm_env().at("SLURM_MIN_JOB_AGE"));
    REQUIRE(min_job_age <= 60);
    auto ok = lab.task("ok", "name: ssh-quick-ok\nrun: echo fine\n");
    auto bad = lab.task("bad", "name: ssh-quick-bad\nrun: exit 5\n");
    auto remote_id = [&](const std::string& file) {
        auto r = lab.tandem({"launch", "-d", "--json", file});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return nlohmann::json::parse(r.out)["remote_id"].get<std::string>();
    };
    const std::vector<std::string> ids{remote_id(ok), remote_id(bad)};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4 * min_job_age + 120);
    auto purged = [&] {
        for (const auto& id : ids) {
            auto q = slurm_command({"squeue", "-h", "-t", "all", "-j", id, "-o", "%i"});
            if (q.exit_code == 0 && contains(q.out, id)) {
                return false;
            }
        }
        return true;
    };
    while (!purged() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(2s);
    }
    REQUIRE(purged());
    auto j = lab.job(1);
    auto f = lab.job(2);
    if (slurm_accounting()) {
        CHECK(j["state"] == "SUCCEEDED");
        CHECK(f["state"] == "FAILED");
        CHECK(f["exit_code"] == 5); // sacct's ExitCode, unlike 22.05's slurmdb REST
    } else { // 24.11 here has no slurmdbd: sacct says accounting is disabled
        for (const auto& g : {j, f}) {
            INFO(g.dump());
            CHECK(g["state"] == "UNKNOWN");
            CHECK(contains(g["reason"].get<std::string>(), "keeps no accounting"));
        }
    }
}

TEST_CASE("ssh: recovery: a job failing once with max_restarts_on_errors 1 succeeds and reports the recovery") {
    SshLab lab;
    const std::string marker = "$HOME/.tandem-test-ssh-flaky-" + std::to_string(::getpid()) + "-" +
                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    auto file = lab.task("flaky", "name: ssh-flaky\nresources:\n  job_recovery: {max_restarts_on_errors: 1}\n"
                                  "run: |\n  if [ ! -f " + marker + " ]; then touch " + marker +
                                  "; echo failing-once; exit 3; fi\n  rm -f " + marker + "\n  echo second-time-lucky\n");
    auto j = lab.wait_terminal(launched_id(lab.tandem({"launch", "-d", file})));
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["recoveries"] == 1);
    CHECK(j["recovered_attempts"][0]["reason"] == "exit code 3");
    auto logs = lab.tandem({"logs", "1"});
    CHECK(contains(logs.out, "failing-once"));
    CHECK(contains(logs.out, "tandem: attempt 2: exit code 3, restart 1 of 1"));
    CHECK(contains(logs.out, "second-time-lucky"));
}
