#include <catch2/catch.hpp>

#include "backends/slurm/rest_v0040.hpp"
#include "slurm_fixtures.hpp"
#include "slurm_plans.hpp"

using namespace tandem;
using namespace tandem::slurm;
using nlohmann::json;

namespace {
const json k_set_1685 = {{"set", true}, {"infinite", false}, {"number", 1685}};

std::vector<SlurmJob> jobs_of(const char* version, const char* file) {
    auto jobs = v0040::parse_jobs(slurm_fixture(version, file));
    REQUIRE(jobs);
    return *jobs;
}

const SlurmJob& by_id(const std::vector<SlurmJob>& jobs, const std::string& id) {
    for (const auto& j : jobs) {
        if (j.job_id == id) {
            return j;
        }
    }
    FAIL("no job " << id);
    return jobs.front();
}
} // namespace

TEST_CASE("v0.0.40 payload: environment array, tres_per_node, no_val numbers, script at the top") {
    const auto body = v0040::submit_payload("#!/bin/bash\n", full_plan(), ApiVersion::v0_0_40);
    CHECK(body["script"] == "#!/bin/bash\n");
    const auto& job = body["job"];
    CHECK_FALSE(job.contains("script"));
    CHECK(job["environment"] == json::array({"GREETING=hi", "HF_TOKEN=s3cr3t"}));
    CHECK(job["tres_per_node"] == "gres/gpu:h100:8");
    CHECK_FALSE(job.contains("gres"));
    CHECK(job["time_limit"] == k_set_1685);
    CHECK(job["memory_per_node"] == json{{"set", true}, {"infinite", false}, {"number", 65536}});
    CHECK(job["minimum_nodes"] == 2);
    CHECK(job["maximum_nodes"] == 2);
    CHECK(job["tasks"] == 2);
    CHECK(job["tasks_per_node"] == 1);
    CHECK(job["cpus_per_task"] == 16);
    CHECK(job["temporary_disk_per_node"] == 102400);
    CHECK(job["constraints"] == "h100&ib");
    CHECK(job["comment"] == "tandem-7f3a9c");
    CHECK(job["standard_output"] == "/home/u/.tandem/slurm/%j.out");
    CHECK(job["standard_error"] == "/home/u/.tandem/slurm/%j.out");
    CHECK(job["current_working_directory"] == "/home/u/project");
    CHECK(job["account"] == "lab");
    CHECK(job["qos"] == "normal");
    CHECK(job["partition"] == "gpu");
    CHECK(job["name"] == "train");
}

TEST_CASE("v0.0.41 payload: the script moves into the job") {
    const auto body = v0040::submit_payload("#!/bin/bash\n", full_plan(), ApiVersion::v0_0_41);
    CHECK_FALSE(body.contains("script"));
    CHECK(body["job"]["script"] == "#!/bin/bash\n");
    CHECK(body["job"]["tres_per_node"] == "gres/gpu:h100:8");
    CHECK(body["job"]["environment"].is_array());
}

TEST_CASE("v0.0.40 payload of a minimal plan") {
    const auto job = v0040::submit_payload("x", minimal_plan(), ApiVersion::v0_0_40)["job"];
    CHECK(job["environment"] == json::array({"TANDEM_JOB_ID=7"}));
    CHECK_FALSE(job.contains("tres_per_node"));
    CHECK_FALSE(job.contains("memory_per_node"));
    CHECK_FALSE(job.contains("partition"));
    auto untyped = minimal_plan();
    untyped.gpus_per_node = 4;
    CHECK(v0040::submit_payload("x", untyped, ApiVersion::v0_0_41)["job"]["tres_per_node"] == "gres/gpu:4");
    auto no_time = minimal_plan();
    no_time.time_limit_minutes.reset(); // the partition's own limit applies, as for a plain sbatch
    CHECK_FALSE(v0040::submit_payload("x", no_time, ApiVersion::v0_0_40)["job"].contains("time_limit"));
}

TEST_CASE("v0.0.40/41 submit responses") {
    auto v40 = v0040::parse_submit_response(slurm_fixture("v0.0.40", "submit_response.json"));
    REQUIRE(v40);
    CHECK(*v40 == "42");
    auto v41 = v0040::parse_submit_response(slurm_fixture("v0.0.41", "submit_response.json"));
    REQUIRE(v41);
    CHECK(*v41 == "43");
    CHECK(v0040::parse_submit_response(json{{"result", {{"job_id", 44}}}}) == "44");

    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        auto bad = v0040::parse_submit_response(slurm_fixture(v, "error_submit.json"));
        REQUIRE_FALSE(bad);
        CHECK(bad.error().kind == ErrorKind::remote);
        CHECK(bad.error().message ==
              "slurm: Invalid partition name specified: Batch job submission failed (error 2000)");
    }
}

TEST_CASE("v0.0.40/41 jobs: state arrays, decoded exit codes, no_val times") {
    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        INFO(v);
        const auto jobs = jobs_of(v, "jobs.json");
        REQUIRE(jobs.size() == 11);

        const auto& queued = by_id(jobs, "101");
        CHECK(queued.state == "PENDING");
        CHECK(queued.state_flags.empty());
        CHECK(queued.start_time == 1796303600); // an estimate, which to_job_update ignores
        CHECK_FALSE(queued.exit_code);
        auto u = to_job_update(queued);
        CHECK(u.state == JobState::pending);
        CHECK(u.reason == "Resources");
        CHECK_FALSE(u.started_at);

        CHECK(to_job_update(by_id(jobs, "102")).reason == "QOSMaxGRESPerUser");
        CHECK_FALSE(by_id(jobs, "102").start_time); // {"set": true, "number": 0}: not yet

        const auto& booting = by_id(jobs, "103");
        CHECK(booting.state_flags == std::vector<std::string>{"CONFIGURING"});
        CHECK(to_job_update(booting).state == JobState::starting);

        const auto& train = by_id(jobs, "104");
        CHECK(train.comment == "tandem-7f3a9c");
        CHECK(train.nodes == "gpu[1-2]");
        u = to_job_update(train);
        CHECK(u.state == JobState::running);
        CHECK(u.started_at == 1796300010);
        CHECK_FALSE(u.ended_at);

        const auto& completing = by_id(jobs, "105");
        CHECK(completing.state_flags == std::vector<std::string>{"COMPLETING"});
        CHECK(completing.exit_code == 3);
        CHECK(to_job_update(completing).state == JobState::running);

        u = to_job_update(by_id(jobs, "106"));
        CHECK(u.state == JobState::succeeded);
        CHECK(u.exit_code == 0);
        CHECK(u.ended_at == 1796300100);

        const auto& exit3 = by_id(jobs, "107");
        CHECK(exit3.exit_code == 3);
        CHECK_FALSE(exit3.signal);
        u = to_job_update(exit3);
        CHECK(u.state == JobState::failed);
        CHECK(u.exit_code == 3);

        const auto& killed = by_id(jobs, "108");
        CHECK(killed.signal == 15);
        CHECK_FALSE(killed.exit_code);
        CHECK(to_job_update(killed).state == JobState::cancelled);

        u = to_job_update(by_id(jobs, "109"));
        CHECK(u.state == JobState::failed);
        CHECK(u.reason == "timeout");

        u = to_job_update(by_id(jobs, "110"));
        CHECK(u.reason == "out of memory (killed by signal 9 (SIGKILL))");
        CHECK(u.exit_code == 137);

        const auto& again = by_id(jobs, "111");
        CHECK(again.state_flags == std::vector<std::string>{"REQUEUED"});
        CHECK(to_job_update(again).state == JobState::pending);
        CHECK(to_job_update(again).reason == "requeued (BeginTime)");
    }
}

TEST_CASE("v0.0.40/41 errors and odd shapes") {
    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        auto unknown = v0040::parse_jobs(slurm_fixture(v, "error_unknown_job.json"));
        REQUIRE_FALSE(unknown);
        CHECK(unknown.error().kind == ErrorKind::not_found);
    }
    // A plain-number exit_code is read as a raw wait status; a plain-number time as itself.
    auto odd = v0040::parse_jobs(json{{"jobs", json::array({json{{"job_id", 5},
                                                                 {"job_state", "FAILED"},
                                                                 {"exit_code", 512},
                                                                 {"start_time", 100},
                                                                 {"end_time", {{"set", false}}}}})}});
    REQUIRE(odd);
    CHECK(odd->front().state == "FAILED");
    CHECK(odd->front().exit_code == 2);
    CHECK(odd->front().start_time == 100);
    CHECK_FALSE(odd->front().end_time);
}

TEST_CASE("v0.0.40/41 accounting: state.current array, decoded exit code, real comment") {
    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        INFO(v);
        auto jobs = v0040::parse_db_jobs(slurm_fixture(v, "db_jobs.json"));
        REQUIRE(jobs);
        REQUIRE(jobs->size() == 3);
        const auto& exit3 = (*jobs)[0];
        CHECK(exit3.state == "FAILED");
        CHECK(exit3.exit_code == 3);
        CHECK(exit3.comment == "tandem-7f3a9c");
        CHECK(exit3.start_time == 1796300010);
        CHECK(exit3.end_time == 1796300020);
        CHECK(to_job_update(exit3).exit_code == 3);
        CHECK((*jobs)[1].signal == 15);
        const auto& never = (*jobs)[2];
        CHECK(never.nodes.empty()); // "None assigned"
        CHECK_FALSE(never.start_time);
        const auto u = to_job_update(never);
        CHECK(u.state == JobState::cancelled);
        CHECK_FALSE(u.started_at);
        CHECK(u.ended_at == 1796300040);
    }
}

TEST_CASE("v0.0.40/41 partitions: configured hostlist, time limit struct, state array") {
    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        INFO(v);
        auto parts = v0040::parse_partitions(slurm_fixture(v, "partitions.json"));
        REQUIRE(parts);
        REQUIRE(parts->size() == 3);
        CHECK((*parts)[0].name == "cpu");
        CHECK((*parts)[0].nodes == std::vector<std::string>{"cpu1", "cpu2"});
        CHECK_FALSE((*parts)[0].max_time_minutes); // infinite
        CHECK((*parts)[0].state == "UP");
        CHECK_FALSE((*parts)[0].is_default);
        CHECK((*parts)[1].nodes == std::vector<std::string>{"gpu01", "gpu02", "gpu7"});
        CHECK((*parts)[1].max_time_minutes == 1440);
        CHECK((*parts)[2].nodes.empty());
        CHECK((*parts)[2].state == "INACTIVE");
    }
    auto flagged = v0040::parse_partitions(json{{"partitions", {{{"name", "p"}, {"flags", {"DEFAULT"}}}}}});
    REQUIRE(flagged);
    CHECK(flagged->front().is_default);
}

TEST_CASE("v0.0.40/41 nodes: state arrays lower-cased, DRAIN wins") {
    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        INFO(v);
        auto nodes = v0040::parse_nodes(slurm_fixture(v, "nodes.json"));
        REQUIRE(nodes);
        REQUIRE(nodes->size() == 3);
        CHECK((*nodes)[0].state == "mixed");
        CHECK((*nodes)[0].alloc_cpus == 2);
        CHECK((*nodes)[0].real_memory_mb == 8000);
        CHECK((*nodes)[0].gres == "gpu:h100:8");
        CHECK((*nodes)[0].gres_used == "gpu:h100:2(IDX:0-1)");
        CHECK((*nodes)[1].state == "drain");
        CHECK((*nodes)[1].partitions == std::vector<std::string>{"gpu", "debug"});
        CHECK((*nodes)[2].state == "down");
    }
}
