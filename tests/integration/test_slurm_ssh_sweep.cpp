// Sweeps (issue 33) over SSH against the real testbeds: a sweep is one Slurm job array (sacct and squeue
// show one array id), every element's output reaches `logs`, a failing element fails the sweep and is
// named, cancel leaves nothing running, and a sweep over MaxArraySize is refused before sbatch.

#include <algorithm>
#include <functional>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_slurm_ssh_support.hpp"

using namespace tandem_test;

namespace {

std::string unique_name(const std::string& prefix) {
    return prefix + "-" + std::to_string(::getpid());
}

// The array's elements as Slurm itself lists them ("<id>_<index>"): sacct where the testbed keeps
// accounting, else squeue (which holds them for MinJobAge after they end).
std::vector<std::string> slurm_elements(const std::string& array_id, std::size_t want) {
    std::vector<std::string> ids;
    for (int i = 0; i < 60; ++i) {
        auto r = slurm_accounting()
                     ? slurm_command({"sacct", "-X", "-n", "-P", "-a", "-j", array_id, "-o", "JobID"})
                     : slurm_command({"squeue", "-h", "-r", "-t", "all", "-j", array_id, "-o", "%i"});
        ids = split_lines(r.out);
        if (r.exit_code == 0 && ids.size() >= want) {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

} // namespace

TEST_CASE("ssh: sweep: a 3x2 grid is one job array of 6 tasks, at most 2 at once, every element in logs") {
    SshLab lab;
    auto file = lab.task("grid", "name: " + unique_name("ssh-sweep") +
                                     "\nconfig:\n  slurm:\n    partition: cpu\n"
                                     "sweep:\n  lr: [\"0.1\", \"0.01\", \"it's 3\"]\n  bs: [16, 32]\n"
                                     "sweep_parallel: 2\n"
                                     "run: |\n  echo \"start $(date +%s%N)\"\n"
                                     "  echo \"lr=$lr bs=$bs index=$TANDEM_SWEEP_INDEX of $TANDEM_SWEEP_SIZE "
                                     "rank=$SKYPILOT_JOB_RANK/$SKYPILOT_NUM_JOBS\"\n"
                                     "  sleep 2\n  echo \"end $(date +%s%N)\"\n");
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    CHECK(contains(plan.out, "Sweep: 6 elements (values of lr, bs), at most 2 at once"));
    CHECK(contains(plan.out, "#SBATCH --array=0-5%2"));
    auto r = lab.tandem({"launch", "--wait", file}, 180s);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "SUCCEEDED"));
    auto j = lab.job(1);
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["reason"] == "6 elements: 6 SUCCEEDED");
    REQUIRE(j["elements"].size() == 6);
    CHECK(j["elements"][5]["values"]["lr"] == "it's 3");
    CHECK(j["elements"][5]["values"]["bs"] == "32");
    CHECK(j["elements"][5]["state"] == "SUCCEEDED");
    CHECK(j["elements"][5]["exit_code"] == 0);

    // One array job with six tasks, as Slurm lists it.
    const std::string id = j["remote_id"];
    std::vector<std::string> want;
    for (int i = 0; i < 6; ++i) {
        want.push_back(id + "_" + std::to_string(i));
    }
    CHECK(slurm_elements(id, 6) == want);

    // Every element's output, labelled; at most two elements were ever running at once.
    auto logs = lab.tandem({"logs", "1"});
    INFO(logs);
    REQUIRE(logs.exit_code == 0);
    CHECK(contains(logs.out, "[lr=0.1 bs=16] lr=0.1 bs=16 index=0 of 6 rank=0/6\n"));
    CHECK(contains(logs.out, "[lr=it's 3 bs=32] lr=it's 3 bs=32 index=5 of 6 rank=5/6\n"));
    const auto at_once = most_at_once(logs.out);
    CHECK(at_once.edges == 12);
    CHECK(at_once.most == 2);
    auto one = lab.tandem({"logs", "1", "--element", "3"});
    INFO(one);
    CHECK(contains(one.out, "lr=0.01 bs=32 index=3 of 6 rank=3/6\n"));
    CHECK_FALSE(contains(one.out, "[lr="));
    CHECK_FALSE(contains(one.out, "index=2"));
    auto bad = lab.tandem({"logs", "1", "--element", "6"});
    CHECK(bad.exit_code != 0);
    CHECK(contains(bad.err, "--element 6: sweep 1 has elements 0..5"));

    // status ID: the sweep's row, then each element with its values.
    auto status = lab.tandem({"status", "1"});
    INFO(status);
    CHECK(contains(status.out, "6 elements: 6 SUCCEEDED"));
    CHECK(contains(status.out, "#4 lr=it's 3 bs=16"));
}

TEST_CASE("ssh: sweep: a failing element fails the sweep, which names it and returns its exit code") {
    SshLab lab;
    auto file =
        lab.task("fail", "name: " + unique_name("ssh-sweep-fail") +
                             "\nconfig:\n  slurm:\n    partition: cpu\n"
                             "sweep:\n  k: [a, b, c]\n"
                             "run: |\n  if [ \"$k\" = b ]; then echo bad; exit 7; fi\n  echo \"ok $k\"\n");
    auto r = lab.tandem({"launch", "--wait", file}, 180s);
    INFO(r);
    CHECK(r.exit_code == 7);
    CHECK(contains(r.err, "FAILED"));
    CHECK(contains(r.err, "failed: #1 k=b: exit code 7"));
    auto j = lab.job(1);
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 7);
    CHECK(j["elements"][0]["state"] == "SUCCEEDED");
    CHECK(j["elements"][1]["state"] == "FAILED");
    CHECK(j["elements"][2]["state"] == "SUCCEEDED");
    auto logs = lab.tandem({"logs", "1"});
    CHECK(contains(logs.out, "[k=b] bad\n"));
    CHECK(contains(logs.out, "[k=c] ok c\n"));
}

TEST_CASE("ssh: sweep: cancel of a running sweep cancels every element and leaves nothing in the queue") {
    SshLab lab;
    auto file = lab.task("long", "name: " + unique_name("ssh-sweep-cancel") +
                                     "\nconfig:\n  slurm:\n    partition: cpu\n"
                                     "sweep_parallel: 2\nrun: sleep 300\n");
    const int id = launched_id(lab.tandem({"launch", "-d", "--num-jobs", "4", file}));
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] { lab.tandem({"cancel", std::to_string(id)}); }};
    auto j = lab.wait_state(id, "RUNNING", 90s);
    INFO(j.dump());
    REQUIRE(j["state"] == "RUNNING");
    CHECK(contains(j["reason"].get<std::string>(), "2 RUNNING, 2 PENDING"));
    // One running element alone (scancel <array>_0): its slot goes to a pending one, and Slurm agrees.
    auto one = lab.tandem({"cancel", std::to_string(id), "--element", "0"});
    INFO(one);
    REQUIRE(one.exit_code == 0);
    CHECK(contains(one.out, "element 0 (#0) cancelled"));
    for (int i = 0; i < 60 && !contains(j["reason"].get<std::string>(), "1 CANCELLED"); ++i) {
        std::this_thread::sleep_for(500ms);
        j = lab.job(id);
    }
    INFO(j.dump());
    CHECK(j["state"] == "RUNNING");
    CHECK(j["elements"][0]["state"] == "CANCELLED");
    CHECK(contains(j["reason"].get<std::string>(), "1 CANCELLED, 2 RUNNING, 1 PENDING"));
    auto c = lab.tandem({"cancel", std::to_string(id)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    auto done = lab.wait_terminal(id, 60s);
    CHECK(done["state"] == "CANCELLED");
    for (const auto& e : done["elements"]) {
        CHECK(e["state"] == "CANCELLED");
    }
    // What Slurm holds of the array: nothing still waiting, running or being cleaned up.
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
    // And what the cluster says afterwards agrees: every element CANCELLED.
    auto later = lab.tandem({"status", std::to_string(id), "--json"});
    INFO(later);
    for (const auto& e : nlohmann::json::parse(later.out)["jobs"][0]["elements"]) {
        CHECK(e["state"] == "CANCELLED");
    }
}

TEST_CASE(
    "ssh: sweep: more elements than the cluster's MaxArraySize is refused before sbatch, with the numbers") {
    SshLab lab;
    auto file =
        lab.task("huge", "name: " + unique_name("ssh-sweep-huge") + "\nrun: echo $SKYPILOT_JOB_RANK\n");
    auto r = lab.tandem({"launch", "-d", "--num-jobs", "1002", file});
    INFO(r);
    CHECK(r.exit_code != 0);
    CHECK(contains(
        r.err, "sweep: 1002 elements, but cluster lab takes job arrays of at most 1001 (its MaxArraySize)"));
}

TEST_CASE("ssh: sweep: an element that left slurmctld keeps its state (accounting, else what was seen)") {
    SshLab lab;
    auto file =
        lab.task("aged", "name: " + unique_name("ssh-sweep-aged") +
                             "\nconfig:\n  slurm:\n    partition: cpu\n"
                             "sweep:\n  k: [fast, slow]\n"
                             "run: |\n  if [ \"$k\" = slow ]; then sleep 50; fi\n  echo \"done $k\"\n");
    const auto launched = std::chrono::steady_clock::now();
    const int id = launched_id(lab.tandem({"launch", "-d", file}));
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] { lab.tandem({"cancel", std::to_string(id)}); }};
    if (!slurm_accounting()) {
        // No slurmdbd: what tandem saw while slurmctld held the element is all there will be.
        for (int i = 0; i < 60 && lab.job(id)["elements"][0]["state"] != "SUCCEEDED"; ++i) {
            std::this_thread::sleep_for(500ms);
        }
    }
    // Past MinJobAge (30 s on the testbeds): the fast element has left slurmctld; with accounting, sacct
    // (its JobID "<id>_0") answers for it.
    std::this_thread::sleep_until(launched + 42s);
    auto j = lab.job(id);
    INFO(j.dump());
    CHECK(j["state"] == "RUNNING");
    CHECK(j["elements"][0]["state"] == "SUCCEEDED");
    CHECK(j["elements"][1]["state"] == "RUNNING");
    auto done = lab.wait_terminal(id, 60s);
    INFO(done.dump());
    CHECK(done["state"] == "SUCCEEDED");
    CHECK(done["reason"] == "2 elements: 2 SUCCEEDED");
}
