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
