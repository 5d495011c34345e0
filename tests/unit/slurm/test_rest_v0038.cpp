#include <catch2/catch.hpp>

#include "backends/slurm/rest_api.hpp"
#include "backends/slurm/rest_json.hpp"
#include "slurm_fixtures.hpp"
#include "slurm_plans.hpp"

using namespace tandem;
using namespace tandem::slurm;
using nlohmann::json;

namespace {
SlurmJob only_job(const char* file) {
    auto jobs = api::parse_jobs(slurm_fixture("v0.0.38", file), ApiVersion::v0_0_38);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    return jobs->front();
}
} // namespace

TEST_CASE("v0.0.38 payload: top-level script, environment object, gres as the transcript's GPU job") {
    const auto body = api::submit_payload("#!/bin/bash\ntrue\n", full_plan(), ApiVersion::v0_0_38);
    CHECK(body["script"] == "#!/bin/bash\ntrue\n");
    const auto& job = body["job"];
    CHECK(job["name"] == "train");
    CHECK(job["partition"] == "gpu");
    CHECK(job["nodes"] == json::array({2, 2}));
    CHECK(job["tasks"] == 2);
    CHECK(job["tasks_per_node"] == 1);
    CHECK(job["gres"] == "gpu:h100:8");
    CHECK(job["cpus_per_task"] == 16);
    CHECK(job["memory_per_node"] == 65536);
    CHECK(job["temporary_disk_per_node"] == 102400);
    CHECK(job["time_limit"] == 1685);
    CHECK(job["account"] == "lab");
    CHECK(job["qos"] == "normal");
    CHECK(job["constraints"] == "h100&ib");
    CHECK(job["standard_output"] == "/home/u/.tandem/slurm/%j.out");
    CHECK(job["standard_error"] == "/home/u/.tandem/slurm/%j.out");
    CHECK(job["comment"] == "tandem-7f3a9c");
    CHECK(job["current_working_directory"] == "/home/u/project");
    CHECK(job["environment"] == json{{"GREETING", "hi"}, {"HF_TOKEN", "s3cr3t"}});
    CHECK_FALSE(job.contains("tres_per_node")); // v0.0.38 refuses it as an unknown key

    // Every key used is one the recorded requests used or the schema lists.
    const auto gpu = slurm_fixture("v0.0.38", "submit_request_gpu.json");
    CHECK(gpu["job"]["gres"] == "gpu:h100:2");
    const auto two = slurm_fixture("v0.0.38", "submit_request_two_nodes.json");
    CHECK(two["job"]["nodes"] == json::array({2, 2}));
}

TEST_CASE("v0.0.38 payload of a minimal plan: no empty options, environment never empty") {
    const auto job = api::submit_payload("x", minimal_plan(), ApiVersion::v0_0_38)["job"];
    CHECK_FALSE(job.contains("partition"));
    CHECK_FALSE(job.contains("gres"));
    CHECK_FALSE(job.contains("account"));
    CHECK_FALSE(job.contains("memory_per_node"));
    CHECK_FALSE(job.contains("standard_output"));
    CHECK(job["environment"] == json{{"TANDEM_JOB_ID", "7"}});
    auto untyped = minimal_plan();
    untyped.gpus_per_node = 2;
    CHECK(api::submit_payload("x", untyped, ApiVersion::v0_0_38)["job"]["gres"] == "gpu:2");
    auto no_time = minimal_plan();
    no_time.time_limit_minutes.reset(); // the partition's own limit applies, as for a plain sbatch
    CHECK_FALSE(api::submit_payload("x", no_time, ApiVersion::v0_0_38)["job"].contains("time_limit"));
    CHECK(api::submit_payload("x", minimal_plan(), ApiVersion::v0_0_38)["job"]["time_limit"] == 10);
}

TEST_CASE("v0.0.38 submit responses: the job id, or Slurm's error text") {
    auto id = api::parse_submit_response(slurm_fixture("v0.0.38", "submit_response.json"), ApiVersion::v0_0_38);
    REQUIRE(id);
    CHECK(*id == "1");

    auto bad = api::parse_submit_response(slurm_fixture("v0.0.38", "error_bad_partition.json"), ApiVersion::v0_0_38);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == ErrorKind::remote);
    CHECK(bad.error().message == "slurm: Invalid partition name specified (error 2000)");

    auto no_env = api::parse_submit_response(slurm_fixture("v0.0.38", "error_no_environment.json"), ApiVersion::v0_0_38);
    REQUIRE_FALSE(no_env);
    CHECK(no_env.error().message ==
          "slurm: environment must be set (error 2127); Failure during parsing (error 9001)");

    CHECK_FALSE(api::parse_submit_response(json::object(), ApiVersion::v0_0_38));
}

TEST_CASE("v0.0.38 jobs (recorded): states, raw wait status, times") {
    const auto done = only_job("job_1_completed.json");
    CHECK(done.job_id == "1");
    CHECK(done.name == "rest-hello");
    CHECK(done.state == "COMPLETED");
    CHECK(done.exit_code == 0);
    CHECK_FALSE(done.signal);
    CHECK(done.start_time == 1796204579);
    CHECK(done.end_time == 1796204581);
    CHECK(done.nodes == "cpu1");
    CHECK(done.standard_output == "/home/slurmtest/rest-hello-%j.out"); // unexpanded, as served
    const auto u = to_job_update(done);
    CHECK(u.state == JobState::succeeded);
    CHECK(u.exit_code == 0);
    CHECK(u.started_at == 1796204579);
    CHECK(u.ended_at == 1796204581);

    const auto failed = only_job("job_2_failed.json"); // exit 3 -> exit_code 768
    CHECK(failed.exit_code == 3);
    CHECK_FALSE(failed.signal);
    CHECK(failed.state_reason == "NonZeroExitCode");
    CHECK(to_job_update(failed).state == JobState::failed);
    CHECK(to_job_update(failed).exit_code == 3);
    CHECK(to_job_update(failed).reason == "exit code 3");

    const auto cancelled = only_job("job_3_cancelled.json"); // exit_code 15: SIGTERM
    CHECK(cancelled.signal == 15);
    CHECK_FALSE(cancelled.exit_code);
    CHECK(to_job_update(cancelled).state == JobState::cancelled);
    CHECK_FALSE(to_job_update(cancelled).exit_code);

    const auto held = only_job("job_4_held.json");
    CHECK(to_job_update(held).state == JobState::pending);
    CHECK(to_job_update(held).reason == "JobHeldUser");

    const auto timeout = only_job("job_19_timeout.json");
    CHECK(timeout.signal == 15);
    const auto tu = to_job_update(timeout);
    CHECK(tu.state == JobState::failed);
    CHECK(tu.reason == "timeout");
    CHECK_FALSE(tu.exit_code);
    CHECK(tu.started_at == 1796203470);
    CHECK(tu.ended_at == 1796203531);

    CHECK(only_job("job_6_two_nodes.json").nodes == "cpu[1-2]");
    CHECK(only_job("job_5_gpu.json").state == "COMPLETED");
}

TEST_CASE("v0.0.38 job list (recorded)") {
    auto jobs = api::parse_jobs(slurm_fixture("v0.0.38", "jobs.json"), ApiVersion::v0_0_38);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 6);
    CHECK((*jobs)[1].exit_code == 3);
    CHECK((*jobs)[2].signal == 15);
    CHECK((*jobs)[3].nodes.empty()); // held, then cancelled: never ran
    CHECK(to_job_update((*jobs)[3]).state == JobState::cancelled);
    CHECK((*jobs)[5].nodes == "cpu[1-2]");
}

TEST_CASE("v0.0.38 error bodies: unknown job is not_found, a bad token is remote") {
    auto unknown = api::parse_jobs(slurm_fixture("v0.0.38", "error_unknown_job.json"), ApiVersion::v0_0_38);
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().kind == ErrorKind::not_found);
    CHECK(unknown.error().message ==
          "slurm: Invalid job id specified: Unable to find JobId=999999 (error 2017)");

    auto token = api::parse_jobs(slurm_fixture("v0.0.38", "error_bad_token.json"), ApiVersion::v0_0_38);
    REQUIRE_FALSE(token);
    CHECK(token.error().kind == ErrorKind::remote);
    CHECK(token.error().message == "slurm: Unspecified error: Failed while looking for jobs (error -1)");

    // slurmdbd's answer for a job it has no row of (GET /slurmdb/v0.0.38/job/<array>, HTTP 500).
    const json nothing = {{"errors", json::array({{{"error_number", 9003},
                                                   {"error", "Nothing found with query"},
                                                   {"description", "Nothing found"}}})}};
    auto none = rest::response_error(nothing);
    REQUIRE(none);
    CHECK(none->kind == ErrorKind::not_found);
    CHECK(none->message == "slurm: Nothing found with query: Nothing found (error 9003)");
    // ... also when it comes with HTTP 200 and an empty list: still nothing found, not a failure.
    auto db = nothing;
    db["jobs"] = json::array();
    auto rows = api::parse_db_jobs(db, ApiVersion::v0_0_38);
    REQUIRE_FALSE(rows);
    CHECK(rows.error().kind == ErrorKind::not_found);

    CHECK_FALSE(api::parse_jobs(json::object(), ApiVersion::v0_0_38));
    // Odd shapes read as "absent", never as an exception.
    auto odd = api::parse_jobs(
        json{{"jobs",
              json::array({json{{"job_id", "x"}, {"exit_code", json::array({1, 2})}, {"job_state", 5}}})}}, ApiVersion::v0_0_38);
    REQUIRE(odd);
    CHECK(odd->front().job_id.empty());
    CHECK(odd->front().state.empty());
    CHECK_FALSE(odd->front().exit_code);
    CHECK(to_job_update(odd->front()).state == JobState::unknown);
}

TEST_CASE("v0.0.38 accounting (recorded): the state is right, the exit code is not trusted") {
    auto jobs = api::parse_db_jobs(slurm_fixture("v0.0.38", "db_job_2.json"), ApiVersion::v0_0_38);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    const auto& j = jobs->front();
    CHECK(j.job_id == "2");
    CHECK(j.state == "FAILED");
    CHECK_FALSE(j.exit_code); // the server says SUCCESS/0 for a job that exited 3
    CHECK(j.start_time == 1796204582);
    const auto u = to_job_update(j);
    CHECK(u.state == JobState::failed);
    CHECK_FALSE(u.exit_code);

    const json signaled = {
        {"jobs",
         {{{"job_id", 9},
           {"state", {{"current", "CANCELLED"}, {"reason", "None"}}},
           {"exit_code", {{"status", "SIGNALED"}, {"signal", {{"signal_id", 9}, {"name", "Killed"}}}}},
           {"nodes", "None assigned"},
           {"comment", {{"job", "tok"}}}}}}};
    auto s = api::parse_db_jobs(signaled, ApiVersion::v0_0_38);
    REQUIRE(s);
    CHECK(s->front().signal == 9);
    CHECK(s->front().nodes.empty());
    CHECK(s->front().comment == "tok");
}

TEST_CASE("v0.0.38 partitions (recorded, and built with every field)") {
    auto recorded = api::parse_partitions(slurm_fixture("v0.0.38", "partitions.json"), ApiVersion::v0_0_38);
    REQUIRE(recorded);
    REQUIRE(recorded->size() == 2);
    CHECK((*recorded)[0].name == "cpu");
    CHECK((*recorded)[0].nodes == std::vector<std::string>{"cpu1", "cpu2"});
    CHECK((*recorded)[1].nodes == std::vector<std::string>{"gpu1", "gpu2"});
    CHECK_FALSE((*recorded)[1].max_time_minutes);

    auto built = api::parse_partitions(slurm_fixture("v0.0.38", "partitions_built.json"), ApiVersion::v0_0_38);
    REQUIRE(built);
    CHECK((*built)[0].is_default);
    CHECK_FALSE((*built)[0].max_time_minutes); // -1: INFINITE
    CHECK((*built)[0].state == "UP");
    CHECK_FALSE((*built)[1].is_default);
    CHECK((*built)[1].max_time_minutes == 1440);
    CHECK((*built)[1].nodes == std::vector<std::string>{"gpu01", "gpu02", "gpu7"});
    CHECK((*built)[1].state == "DRAIN");

    auto broken = api::parse_partitions(json{{"partitions", {{{"name", "x"}, {"nodes", "n[1-"}}}}}, ApiVersion::v0_0_38);
    REQUIRE_FALSE(broken);
    CHECK(broken.error().kind == ErrorKind::remote);
}

TEST_CASE("v0.0.38 nodes (recorded, and built): lower-case states, drain from state_flags") {
    auto recorded = api::parse_nodes(slurm_fixture("v0.0.38", "nodes.json"), ApiVersion::v0_0_38);
    REQUIRE(recorded);
    REQUIRE(recorded->size() == 4);
    CHECK((*recorded)[2].name == "gpu1");
    CHECK((*recorded)[2].state == "idle");
    CHECK((*recorded)[2].cpus == 8);
    CHECK((*recorded)[2].gres == "gpu:h100:8");
    CHECK((*recorded)[2].partitions == std::vector<std::string>{"gpu"});

    auto built = api::parse_nodes(slurm_fixture("v0.0.38", "nodes_built.json"), ApiVersion::v0_0_38);
    REQUIRE(built);
    CHECK((*built)[0].state == "mixed");
    CHECK((*built)[0].alloc_cpus == 2);
    CHECK((*built)[0].real_memory_mb == 8000);
    CHECK((*built)[0].gres_used == "gpu:h100:2(IDX:0-1)");
    CHECK((*built)[1].state == "drain");
    CHECK((*built)[1].partitions == std::vector<std::string>{"gpu", "debug"});
    CHECK((*built)[2].state == "down");
}
