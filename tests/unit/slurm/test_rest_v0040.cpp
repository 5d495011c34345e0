// The v0.0.40/41/42 mappers on answers recorded from a real Slurm 24.11.5 slurmrestd (tests/fixtures/slurm/
// v0.0.4x, see their README.md): one GET /jobs at one moment held a job in each state below, and the three
// versions answered it alike. Only the accounting answers (db_jobs.json, no slurmdbd on the testbed) and
// the shapes the testbed cannot produce (flags such as CONFIGURING) are still built by hand.

#include <catch2/catch.hpp>

#include "backends/slurm/rest_api.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "slurm_fixtures.hpp"
#include "slurm_plans.hpp"

using namespace tandem;
using namespace tandem::slurm;
using nlohmann::json;

namespace {
const json k_set_1685 = {{"set", true}, {"infinite", false}, {"number", 1685}};
// The versions a 24.11 server speaks; every fixture directory was recorded from the same server.
constexpr const char* k_recorded[] = {"v0.0.40", "v0.0.41", "v0.0.42"};

// Job ids and times of the recorded GET /jobs (tests/fixtures/slurm/v0.0.4x/jobs.json).
constexpr std::int64_t k_started = 1796404419;   // timeout, running, cancel and gpu started together
constexpr std::int64_t k_timed_out = 1796404484; // 64 hit its 1-minute limit
constexpr std::int64_t k_quick = 1796404487;     // 70 and 71 started and ended, 66 was cancelled

std::vector<SlurmJob> jobs_of(const char* version, const char* file) {
    auto jobs = api::parse_jobs(slurm_fixture(version, file), ApiVersion::v0_0_40);
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
    const auto body = api::submit_payload("#!/bin/bash\n", full_plan(), ApiVersion::v0_0_40);
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

TEST_CASE("v0.0.41 and v0.0.42 payloads: the script moves into the job") {
    for (const auto version : {ApiVersion::v0_0_41, ApiVersion::v0_0_42}) {
        INFO(to_string(version));
        const auto body = api::submit_payload("#!/bin/bash\n", full_plan(), version);
        CHECK_FALSE(body.contains("script")); // deprecated in v0.0.41 and v0.0.42
        CHECK(body.size() == 1);
        CHECK(body["job"]["script"] == "#!/bin/bash\n");
        CHECK(body["job"]["tres_per_node"] == "gres/gpu:h100:8");
        CHECK(body["job"]["environment"].is_array());
        CHECK(body["job"]["time_limit"] == k_set_1685);
    }
    // v0.0.42 sends what v0.0.41 sends: the 24.11 schema kept every field tandem fills.
    CHECK(api::submit_payload("x", full_plan(), ApiVersion::v0_0_42) ==
          api::submit_payload("x", full_plan(), ApiVersion::v0_0_41));
}

TEST_CASE("v0.0.40 payload of a minimal plan") {
    const auto job = api::submit_payload("x", minimal_plan(), ApiVersion::v0_0_40)["job"];
    CHECK(job["environment"] == json::array({"TANDEM_JOB_ID=7"}));
    CHECK_FALSE(job.contains("tres_per_node"));
    CHECK_FALSE(job.contains("memory_per_node"));
    CHECK_FALSE(job.contains("partition"));
    auto untyped = minimal_plan();
    untyped.gpus_per_node = 4;
    CHECK(api::submit_payload("x", untyped, ApiVersion::v0_0_41)["job"]["tres_per_node"] == "gres/gpu:4");
    auto no_time = minimal_plan();
    no_time.time_limit_minutes.reset(); // the partition's own limit applies, as for a plain sbatch
    CHECK_FALSE(api::submit_payload("x", no_time, ApiVersion::v0_0_40)["job"].contains("time_limit"));
    CHECK_FALSE(api::submit_payload("x", no_time, ApiVersion::v0_0_42)["job"].contains("time_limit"));
}

TEST_CASE("submit responses recorded from 24.11: job_id at the top, v0.0.40/41 also in result") {
    // v0.0.40 and v0.0.41 answer {"result": {"job_id": N, ...}, "job_id": N}; v0.0.42 has no result.
    const auto v40 = slurm_fixture("v0.0.40", "submit_response.json");
    CHECK(v40["result"]["job_id"] == 70);
    CHECK(api::parse_submit_response(v40, ApiVersion::v0_0_40) == "70");
    CHECK(api::parse_submit_response(slurm_fixture("v0.0.41", "submit_response.json"), ApiVersion::v0_0_40) == "71");
    const auto v42 = slurm_fixture("v0.0.42", "submit_response.json");
    CHECK_FALSE(v42.contains("result"));
    CHECK(api::parse_submit_response(v42, ApiVersion::v0_0_40) == "65");
    CHECK(api::parse_submit_response(json{{"result", {{"job_id", 44}}}}, ApiVersion::v0_0_40) == "44");

    for (const char* v : k_recorded) { // partition "nosuch": HTTP 500
        INFO(v);
        auto bad = api::parse_submit_response(slurm_fixture(v, "error_submit.json"), ApiVersion::v0_0_40);
        REQUIRE_FALSE(bad);
        CHECK(bad.error().kind == ErrorKind::remote);
        CHECK(bad.error().message ==
              "slurm: Invalid partition name specified: Batch job submission failed (error 2000)");
    }
}

TEST_CASE("24.11 jobs, every version: state arrays, decoded exit codes, no_val times") {
    for (const char* v : k_recorded) {
        INFO(v);
        const auto jobs = jobs_of(v, "jobs.json");
        REQUIRE(jobs.size() == 8);

        // --time=1, killed by SIGTERM at its limit: a failure Slurm caused, without an exit code.
        const auto& timeout = by_id(jobs, "64");
        CHECK(timeout.name == "fixture-timeout");
        CHECK(timeout.state == "TIMEOUT");
        CHECK(timeout.state_flags.empty());
        CHECK(timeout.state_reason == "TimeLimit");
        CHECK(timeout.signal == 15);
        CHECK_FALSE(timeout.exit_code);
        CHECK(timeout.nodes == "cpu1");
        auto u = to_job_update(timeout);
        CHECK(u.state == JobState::failed);
        CHECK(u.reason == "timeout");
        CHECK_FALSE(u.exit_code);
        CHECK(u.started_at == k_started);
        CHECK(u.ended_at == k_timed_out);

        const auto& running = by_id(jobs, "65");
        CHECK(running.state == "RUNNING");
        CHECK(running.state_reason == "None");
        CHECK(running.comment == "tandem-fixture-running");
        CHECK(running.standard_output == "/home/slurmtest/fixture-running-65.out"); // 24.11 expands %j
        CHECK(running.exit_code == 0); // Slurm reports SUCCESS/0 before a job has ended
        CHECK(running.end_time == k_started + 3600); // its time limit, not an end
        u = to_job_update(running);
        CHECK(u.state == JobState::running);
        CHECK(u.started_at == k_started);
        CHECK_FALSE(u.ended_at);
        CHECK_FALSE(u.exit_code);

        // Cancelled while running (DELETE /slurm/v0.0.42/job/66).
        const auto& cancelled = by_id(jobs, "66");
        CHECK(cancelled.state == "CANCELLED");
        CHECK(cancelled.signal == 15);
        CHECK_FALSE(cancelled.exit_code);
        u = to_job_update(cancelled);
        CHECK(u.state == JobState::cancelled);
        CHECK(u.reason == "cancelled");
        CHECK(u.started_at == k_started);
        CHECK(u.ended_at == k_quick);

        const auto& gpu = by_id(jobs, "67");
        CHECK(gpu.state == "RUNNING");
        CHECK(gpu.nodes == "gpu1");

        // Held (hold: true): no start, no nodes.
        const auto& held = by_id(jobs, "68");
        CHECK(held.state == "PENDING");
        CHECK(held.state_reason == "JobHeldUser");
        CHECK_FALSE(held.start_time); // {"set": true, "number": 0}
        CHECK_FALSE(held.end_time);
        CHECK(held.nodes.empty());
        u = to_job_update(held);
        CHECK(u.state == JobState::pending);
        CHECK(u.reason == "JobHeldUser");
        CHECK_FALSE(u.started_at);
        CHECK_FALSE(u.exit_code);

        // Deferred two hours (begin_time): its start_time is that estimate, which to_job_update ignores.
        const auto& later = by_id(jobs, "69");
        CHECK(later.state_reason == "BeginTime");
        CHECK(later.start_time == 1796411619);
        u = to_job_update(later);
        CHECK(u.state == JobState::pending);
        CHECK(u.reason == "BeginTime");
        CHECK_FALSE(u.started_at);

        const auto& done = by_id(jobs, "70");
        CHECK(done.state == "COMPLETED");
        CHECK(done.exit_code == 0);
        u = to_job_update(done);
        CHECK(u.state == JobState::succeeded);
        CHECK(u.exit_code == 0);
        CHECK(u.started_at == k_quick);
        CHECK(u.ended_at == k_quick);

        const auto& exit3 = by_id(jobs, "71");
        CHECK(exit3.state == "FAILED");
        CHECK(exit3.state_reason == "NonZeroExitCode");
        CHECK(exit3.exit_code == 3);
        CHECK_FALSE(exit3.signal);
        CHECK(exit3.comment == "tandem-fixture-exit3");
        u = to_job_update(exit3);
        CHECK(u.state == JobState::failed);
        CHECK(u.exit_code == 3);
        CHECK(u.reason == "exit code 3");
        CHECK(u.ended_at == k_quick);
    }
}

TEST_CASE("24.11 answers the same jobs alike in v0.0.40, v0.0.41 and v0.0.42") {
    const auto v40 = jobs_of("v0.0.40", "jobs.json");
    for (const char* v : {"v0.0.41", "v0.0.42"}) {
        INFO(v);
        const auto other = jobs_of(v, "jobs.json");
        REQUIRE(other.size() == v40.size());
        for (std::size_t i = 0; i < v40.size(); ++i) {
            INFO(v40[i].job_id);
            CHECK(other[i].job_id == v40[i].job_id);
            CHECK(other[i].name == v40[i].name);
            CHECK(other[i].state == v40[i].state);
            CHECK(other[i].state_flags == v40[i].state_flags);
            CHECK(other[i].state_reason == v40[i].state_reason);
            CHECK(other[i].exit_code == v40[i].exit_code);
            CHECK(other[i].signal == v40[i].signal);
            CHECK(other[i].start_time == v40[i].start_time);
            CHECK(other[i].end_time == v40[i].end_time);
            CHECK(other[i].nodes == v40[i].nodes);
            CHECK(other[i].comment == v40[i].comment);
            CHECK(other[i].standard_output == v40[i].standard_output);
        }
    }
}

TEST_CASE("state arrays with flags and signalled exits (hand-made: the testbed makes none)") {
    const json sig9 = {{"status", {"SIGNALED"}},
                       {"return_code", {{"set", false}, {"infinite", false}, {"number", 0}}},
                       {"signal", {{"id", {{"set", true}, {"infinite", false}, {"number", 9}}}, {"name", "KILL"}}}};
    const json err3 = {{"status", {"ERROR"}},
                       {"return_code", {{"set", true}, {"infinite", false}, {"number", 3}}},
                       {"signal", {{"id", {{"set", false}, {"infinite", false}, {"number", 0}}}, {"name", ""}}}};
    const json pending = {{"status", {"PENDING"}}, {"return_code", {{"set", false}}}};
    auto jobs = api::parse_jobs(json{
        {"jobs", json::array({json{{"job_id", 1}, {"job_state", {"RUNNING", "CONFIGURING"}}},
                              json{{"job_id", 2}, {"job_state", {"RUNNING", "COMPLETING"}}, {"exit_code", err3}},
                              json{{"job_id", 3}, {"job_state", {"OUT_OF_MEMORY"}}, {"exit_code", sig9}},
                              json{{"job_id", 4},
                                   {"job_state", {"PENDING", "REQUEUED"}},
                                   {"state_reason", "BeginTime"},
                                   {"exit_code", pending}}})}}, ApiVersion::v0_0_40);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 4);
    CHECK((*jobs)[0].state_flags == std::vector<std::string>{"CONFIGURING"});
    CHECK(to_job_update((*jobs)[0]).state == JobState::starting);
    CHECK((*jobs)[1].state_flags == std::vector<std::string>{"COMPLETING"});
    CHECK((*jobs)[1].exit_code == 3);
    CHECK(to_job_update((*jobs)[1]).state == JobState::running);
    CHECK((*jobs)[2].signal == 9);
    CHECK_FALSE((*jobs)[2].exit_code);
    CHECK(to_job_update((*jobs)[2]).reason == "out of memory (killed by signal 9 (SIGKILL))");
    CHECK(to_job_update((*jobs)[2]).exit_code == 137);
    CHECK_FALSE((*jobs)[3].exit_code); // status PENDING: nothing to read
    CHECK(to_job_update((*jobs)[3]).reason == "requeued (BeginTime)");
}

TEST_CASE("24.11 errors and odd shapes") {
    for (const char* v : k_recorded) { // GET /job/999999: HTTP 404, error 2017
        INFO(v);
        auto unknown = api::parse_jobs(slurm_fixture(v, "error_unknown_job.json"), ApiVersion::v0_0_40);
        REQUIRE_FALSE(unknown);
        CHECK(unknown.error().kind == ErrorKind::not_found);
    }
    // A plain-number exit_code is read as a raw wait status; a plain-number time as itself.
    auto odd = api::parse_jobs(json{{"jobs", json::array({json{{"job_id", 5},
                                                                 {"job_state", "FAILED"},
                                                                 {"exit_code", 512},
                                                                 {"start_time", 100},
                                                                 {"end_time", {{"set", false}}}}})}}, ApiVersion::v0_0_40);
    REQUIRE(odd);
    CHECK(odd->front().state == "FAILED");
    CHECK(odd->front().exit_code == 2);
    CHECK(odd->front().start_time == 100);
    CHECK_FALSE(odd->front().end_time);
}

TEST_CASE("v0.0.40/41 accounting (hand-made): state.current array, decoded exit code, real comment") {
    for (const char* v : {"v0.0.40", "v0.0.41"}) {
        INFO(v);
        auto jobs = api::parse_db_jobs(slurm_fixture(v, "db_jobs.json"), ApiVersion::v0_0_40);
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

TEST_CASE("24.11 partitions: configured hostlist, time limit struct, state array") {
    for (const char* v : k_recorded) {
        INFO(v);
        auto parts = api::parse_partitions(slurm_fixture(v, "partitions.json"), ApiVersion::v0_0_40);
        REQUIRE(parts);
        REQUIRE(parts->size() == 3);
        const auto& cpu = (*parts)[0];
        CHECK(cpu.name == "cpu");
        CHECK(cpu.nodes == std::vector<std::string>{"cpu1", "cpu2"});
        CHECK(cpu.max_time_minutes == 24 * 60);
        CHECK_FALSE(cpu.default_time_minutes); // {"set": false}: no DefaultTime
        CHECK(cpu.state == "UP");
        // cpu is Default=YES in slurm.conf, but the answer has no flags and no other marker of it.
        CHECK_FALSE(cpu.is_default);
        const auto& gpu = (*parts)[1];
        CHECK(gpu.name == "gpu");
        CHECK(gpu.nodes == std::vector<std::string>{"gpu1", "gpu2"});
        CHECK(gpu.max_time_minutes == 2 * 24 * 60);
        const auto& batch = (*parts)[2];
        CHECK(batch.name == "batch");
        CHECK(batch.nodes == std::vector<std::string>{"cpu1", "cpu2"});
        CHECK_FALSE(batch.max_time_minutes); // no MaxTime: {"infinite": true}
        CHECK(batch.state == "UP");
        for (const auto& p : *parts) {
            CHECK_FALSE(p.is_default);
        }
    }
    auto flagged = api::parse_partitions(json{{"partitions", {{{"name", "p"}, {"flags", {"DEFAULT"}}}}}}, ApiVersion::v0_0_40);
    REQUIRE(flagged);
    CHECK(flagged->front().is_default);
}

TEST_CASE("24.11 nodes: state arrays lower-cased, GPUs and their use") {
    for (const char* v : k_recorded) {
        INFO(v);
        auto nodes = api::parse_nodes(slurm_fixture(v, "nodes.json"), ApiVersion::v0_0_40);
        REQUIRE(nodes);
        REQUIRE(nodes->size() == 4);
        const auto& cpu1 = (*nodes)[0];
        CHECK(cpu1.name == "cpu1");
        CHECK(cpu1.state == "allocated");
        CHECK(cpu1.cpus == 4);
        CHECK(cpu1.alloc_cpus == 4);
        CHECK(cpu1.real_memory_mb == 4000);
        CHECK(cpu1.gres.empty());
        CHECK(cpu1.gres_used.empty());
        CHECK(cpu1.partitions == std::vector<std::string>{"cpu", "batch"});
        CHECK((*nodes)[1].name == "cpu2");
        CHECK((*nodes)[1].state == "idle");
        const auto& gpu1 = (*nodes)[2];
        CHECK(gpu1.name == "gpu1");
        CHECK(gpu1.state == "mixed");
        CHECK(gpu1.cpus == 8);
        CHECK(gpu1.alloc_cpus == 1);
        CHECK(gpu1.real_memory_mb == 8000);
        CHECK(gpu1.gres == "gpu:h100:8");
        CHECK(gpu1.gres_used == "gpu:h100:2(IDX:0-1)"); // job 67's two GPUs
        CHECK(gpu1.partitions == std::vector<std::string>{"gpu"});
        CHECK((*nodes)[3].state == "idle");
        CHECK((*nodes)[3].gres_used == "gpu:h100:0(IDX:N/A)");

        auto parts = api::parse_partitions(slurm_fixture(v, "partitions.json"), ApiVersion::v0_0_40);
        REQUIRE(parts);
        const auto inv = build_inventory("tandem24", *parts, *nodes);
        REQUIRE(inv.pools.size() == 3);
        CHECK(inv.pools[1].name == "gpu");
        CHECK(inv.pools[1].accelerator == "h100");
        CHECK(inv.pools[1].gpus_per_node == 8);
        CHECK(inv.pools[1].gpus_total == 16);
        CHECK(inv.pools[1].gpus_free == 14);
        CHECK(inv.pools[1].max_time_minutes == 2 * 24 * 60);
        CHECK(inv.pools[0].cpus_per_node == 4);
        CHECK(inv.pools[0].nodes_free == 1);
        CHECK(inv.pools[0].accelerator.empty());
        CHECK_FALSE(inv.pools[2].max_time_minutes);
    }
    // Drained and down nodes (hand-made: the testbed keeps its nodes up).
    auto odd = api::parse_nodes(json{{"nodes",
                                        {{{"name", "a"}, {"state", {"IDLE", "DRAIN"}}},
                                         {{"name", "b"}, {"state", {"DOWN", "NOT_RESPONDING"}}},
                                         {{"name", "c"}, {"state", {"MIXED", "DRAINING"}}}}}}, ApiVersion::v0_0_40);
    REQUIRE(odd);
    CHECK((*odd)[0].state == "drain");
    CHECK((*odd)[1].state == "down");
    CHECK((*odd)[2].state == "drain");
}

TEST_CASE("v0.0.42 cancel answers: only an error other than 'gone' is a refusal") {
    // DELETE /slurm/v0.0.42/job/{id} answers HTTP 200 in each case; the outcome is in status[].
    const auto unknown = slurm_fixture("v0.0.42", "cancel_unknown.json"); // job 999999
    REQUIRE(unknown["status"].size() == 1);
    CHECK(unknown["status"][0]["error"]["code"] == 2017);
    CHECK_FALSE(api::cancel_refusal(unknown));
    const auto finished = slurm_fixture("v0.0.42", "cancel_finished.json"); // job 64, already TIMEOUT
    CHECK(finished["status"][0]["error"]["code"] == 2021);
    CHECK_FALSE(api::cancel_refusal(finished));
    const auto running = slurm_fixture("v0.0.42", "cancel_running.json"); // job 66
    CHECK(running["status"].empty());
    CHECK_FALSE(api::cancel_refusal(running));
    // v0.0.40 and v0.0.41 have no status[] (they answer {"errors": [], "warnings": []} even for an unknown job).
    CHECK_FALSE(api::cancel_refusal(json{{"errors", json::array()}, {"warnings", json::array()}}));

    // Any other code is a refusal, named in one line (hand-made: the testbed has one user, so no EPERM).
    auto denied = unknown;
    denied["status"][0]["error"] = {
        {"string", "Operation not permitted"}, {"code", 1}, {"message", "Operation not permitted"}};
    denied["status"][0]["step_id"] = "66";
    const auto refusal = api::cancel_refusal(denied);
    REQUIRE(refusal);
    CHECK(*refusal == "Operation not permitted (error 1)");
    CHECK(refusal->find('\n') == std::string::npos);

    auto two_lines = denied;
    two_lines["status"][0]["error"]["message"] = "Access denied\nby policy";
    CHECK(api::cancel_refusal(two_lines) == "Access denied by policy (error 1)");
    auto no_message = denied;
    no_message["status"][0]["error"]["message"] = "";
    CHECK(api::cancel_refusal(no_message) == "Operation not permitted (error 1)"); // falls back to "string"
    // A refusal after a "gone" entry still counts.
    auto mixed = unknown;
    mixed["status"].push_back(denied["status"][0]);
    CHECK(api::cancel_refusal(mixed) == "Operation not permitted (error 1)");
}

TEST_CASE("v0.0.40+: restart_cnt is read (a requeued job's count), also through the skimmed GET /jobs") {
    for (const char* v : k_recorded) {
        for (const auto& j : jobs_of(v, "jobs.json")) {
            CHECK(j.restarts == 0); // as recorded: nothing was requeued
        }
        auto body = slurm_fixture(v, "jobs.json");
        body["jobs"][0]["restart_cnt"] = 2;
        auto jobs = api::parse_jobs(body, ApiVersion::v0_0_40);
        REQUIRE(jobs);
        CHECK(jobs->front().restarts == 2);
        body["jobs"][0]["restart_cnt"] = -5; // untrusted: bounded
        CHECK(api::parse_jobs(body, ApiVersion::v0_0_40)->front().restarts == 0);
    }
}
