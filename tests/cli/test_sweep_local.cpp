// Sweeps (issue 33) on this machine, through the real binary: the elements run at most sweep_parallel at
// a time, each with its values; a failing element does not stop the others and is named; cancel ends
// every element and leaves no process behind.

#include <algorithm>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

using namespace tandem_test;

namespace {

const char* k_fast_grace = "clusters: [{name: local, type: local, cancel_grace_seconds: \"1\"}]\n";

} // namespace

TEST_CASE("local sweep: a 2x2 grid runs two at a time, each element with its values, logs labelled",
          "[sweep]") {
    TempHome t;
    auto file =
        t.write("grid.yaml", "name: grid\nsweep:\n  lr: [\"0.1\", \"it's 2\"]\n  bs: [8, 16]\n"
                             "sweep_parallel: 2\nrun: |\n  echo \"start $(date +%s%N)\"\n"
                             "  echo \"lr=$lr bs=$bs index=$TANDEM_SWEEP_INDEX of $SKYPILOT_NUM_JOBS\"\n"
                             "  sleep 1\n  echo \"end $(date +%s%N)\"\n");
    auto r = t.tandem({"launch", "--wait", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto j = t.wait_for_terminal(1);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["reason"] == "4 elements: 4 SUCCEEDED");
    REQUIRE(j["elements"].size() == 4);
    CHECK(j["elements"][3]["values"]["lr"] == "it's 2");
    CHECK(j["elements"][3]["exit_code"] == 0);
    auto logs = t.tandem({"logs", "1"});
    INFO(logs);
    CHECK(contains(logs.out, "[lr=0.1 bs=8] lr=0.1 bs=8 index=0 of 4\n"));
    CHECK(contains(logs.out, "[lr=it's 2 bs=16] lr=it's 2 bs=16 index=3 of 4\n"));
    const auto at_once = most_at_once(logs.out);
    CHECK(at_once.edges == 8);
    CHECK(at_once.most == 2);
    auto one = t.tandem({"logs", "1", "--element", "2"});
    CHECK(contains(one.out, "lr=it's 2 bs=8 index=2 of 4\n"));
    CHECK_FALSE(contains(one.out, "[lr="));
    auto plan = t.tandem({"plan", file});
    CHECK(contains(plan.out, "element.sh"));
}

TEST_CASE("local sweep: a failing element fails the sweep and is named, the others run to the end",
          "[sweep]") {
    TempHome t;
    auto file = t.write("fail.yaml", "name: fail\nsweep:\n  k: [a, b, c]\n"
                                     "run: |\n  if [ \"$k\" = b ]; then echo bad; exit 7; fi\n"
                                     "  sleep 1; echo \"ok $k\"\n");
    auto r = t.tandem({"launch", "--wait", file});
    INFO(r);
    CHECK(r.exit_code == 7);
    CHECK(contains(r.err, "failed: #1 k=b: exit code 7"));
    auto j = t.wait_for_terminal(1);
    CHECK(j["state"] == "FAILED");
    CHECK(j["elements"][0]["state"] == "SUCCEEDED");
    CHECK(j["elements"][1]["state"] == "FAILED");
    CHECK(j["elements"][2]["state"] == "SUCCEEDED");
    auto logs = t.tandem({"logs", "1"});
    CHECK(contains(logs.out, "[k=b] bad\n"));
    CHECK(contains(logs.out, "[k=c] ok c\n"));
}

TEST_CASE("local sweep: cancel ends every element and starts no more", "[sweep]") {
    TempHome t;
    t.write_config(k_fast_grace);
    const std::string marker = "299." + std::to_string(::getpid());
    auto file = t.write("long.yaml", "name: long\nsweep_parallel: 2\nrun: sleep " + marker + "\n");
    auto r = t.tandem({"launch", "-d", "--num-jobs", "4", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    nlohmann::json j;
    for (int i = 0; i < 100; ++i) {
        j = t.job_json(1);
        if (contains(j["reason"].get<std::string>(), "2 RUNNING, 2 PENDING")) {
            break;
        }
        std::this_thread::sleep_for(100ms);
    }
    INFO(j.dump());
    CHECK(j["state"] == "RUNNING");
    CHECK(contains(j["reason"].get<std::string>(), "2 RUNNING, 2 PENDING"));
    auto c = t.tandem({"cancel", "1"});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    auto done = t.wait_for_terminal(1);
    CHECK(done["state"] == "CANCELLED");
    for (const auto& e : done["elements"]) {
        CHECK(e["state"] == "CANCELLED");
    }
    std::this_thread::sleep_for(500ms);
    auto left = run({"/usr/bin/pgrep", "-f", "sleep " + marker});
    CHECK(left.out.empty());
    CHECK_FALSE(file_exists(t.job_dir(1) + "/element-2.log")); // never started
}

TEST_CASE("local sweep: cancel --element stops that element alone, the others run to the end", "[sweep]") {
    TempHome t;
    t.write_config(k_fast_grace);
    const std::string marker = "298." + std::to_string(::getpid());
    auto file = t.write("one.yaml", "name: one\nsweep:\n  k: [a, slow, c]\n"
                                    "run: |\n  if [ \"$k\" = slow ]; then sleep " +
                                        marker +
                                        "; fi\n"
                                        "  sleep 2; echo \"done $k\"\n");
    auto r = t.tandem({"launch", "-d", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < 100 && !contains(j.value("reason", ""), "3 RUNNING"); ++i) {
        std::this_thread::sleep_for(100ms);
        j = t.job_json(1);
    }
    REQUIRE(contains(j["reason"].get<std::string>(), "3 RUNNING"));
    auto c = t.tandem({"cancel", "1", "--element", "1"});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    CHECK(contains(c.out, "job 1 (one) element 1 (k=slow) cancelled"));
    CHECK(run({"/usr/bin/pgrep", "-f", "sleep " + marker}).out.empty());
    j = t.job_json(1);
    CHECK(j["elements"][1]["state"] == "CANCELLED");
    CHECK(j["elements"][0]["state"] == "RUNNING");
    auto done = t.wait_for_terminal(1);
    INFO(done.dump());
    CHECK(done["state"] == "CANCELLED");
    CHECK(done["elements"][0]["state"] == "SUCCEEDED");
    CHECK(done["elements"][1]["state"] == "CANCELLED");
    CHECK(done["elements"][2]["state"] == "SUCCEEDED");
    // Cancelling an element that ended is a note; one that does not exist, or a job that is no sweep, an
    // error.
    auto again = t.tandem({"cancel", "1", "--element", "0"});
    CHECK(again.exit_code == 0);
    CHECK(contains(again.err, "job 1 element 0 (k=a) already ended"));
    auto missing = t.tandem({"cancel", "1", "--element", "3"});
    CHECK(missing.exit_code != 0);
    CHECK(contains(missing.err, "--element 3: job 1 has elements 0-2"));
    auto two = t.tandem({"cancel", "1", "2", "--element", "0"});
    CHECK(two.exit_code != 0);
    CHECK(contains(two.err, "name one job"));
}
