// A sweep as one Slurm job array (issue 33): the script's --array line and per-element values, array ids
// as squeue and sacct print them, and the elements folded into the sweep's one update.

#include <catch2/catch.hpp>

#include "backends/slurm/job_array.hpp"
#include "backends/slurm/rest_api.hpp"
#include "backends/slurm/sbatch_script.hpp"
#include "backends/slurm/slurm_cli.hpp"
#include "core/line_prefix.hpp"
#include "slurm_plans.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {

Sweep grid() {
    auto s = sweep_grid({{"lr", {"0.1", "it's 2"}}, {"bs", {"16", "32", "64"}}});
    REQUIRE(s);
    return *s;
}

SlurmJob line(const std::string& id, const std::string& state, std::optional<int> code = std::nullopt) {
    SlurmJob j;
    REQUIRE(read_slurm_job_id(id, j));
    j.state = state;
    j.exit_code = code;
    j.state_reason = state == "PENDING" ? "JobArrayTaskLimit" : "None";
    if (state != "PENDING") {
        j.start_time = 1000 + (j.array_task ? *j.array_task : 0);
    }
    if (state == "COMPLETED" || state == "FAILED") {
        j.end_time = 2000 + (j.array_task ? *j.array_task : 0);
    }
    return j;
}

} // namespace

TEST_CASE("job array: the script asks for one array task per element, at most P at once") {
    TaskSpec spec;
    spec.name = "sweep";
    spec.run = "echo $lr $bs";
    spec.sweep = grid();
    spec.sweep->parallel = 2;
    auto plan = minimal_plan();
    plan.sweep = spec.sweep;
    plan.output_pattern = "/home/u/tandem-abc-%A_%a.out";
    auto script = render_sbatch_script(spec, plan);
    REQUIRE(script);
    CHECK_THAT(*script, Catch::Contains("#SBATCH --array=0-5%2\n"));
    CHECK_THAT(*script, Catch::Contains("#SBATCH --output=/home/u/tandem-abc-%A_%a.out\n"));
    CHECK_THAT(*script,
               Catch::Contains("case \"${SLURM_ARRAY_TASK_ID:-0}\" in\n0) export lr='0.1' bs='16' ;;\n"));
    CHECK_THAT(*script, Catch::Contains("5) export lr='it'\\''s 2' bs='64' ;;\nesac\n"));
    CHECK_THAT(*script, Catch::Contains("TANDEM_SWEEP_SIZE=6"));
    spec.sweep->parallel = 0;
    plan.sweep = spec.sweep;
    auto open = render_sbatch_script(spec, plan);
    REQUIRE(open);
    CHECK_THAT(*open, Catch::Contains("#SBATCH --array=0-5\n"));
    // Without values (--num-jobs): no case, only the rank.
    spec.sweep = *sweep_ranks(3);
    plan.sweep = spec.sweep;
    auto ranks = render_sbatch_script(spec, plan);
    REQUIRE(ranks);
    CHECK_THAT(*ranks, !Catch::Contains("case \"${SLURM_ARRAY_TASK_ID"));
    CHECK_THAT(*ranks, Catch::Contains("SKYPILOT_NUM_JOBS=3"));
}

TEST_CASE("job array: ids as squeue and sacct print them") {
    SlurmJob j;
    CHECK(read_slurm_job_id("123", j));
    CHECK(j.job_id == "123");
    CHECK_FALSE(j.array_task);
    SlurmJob e;
    CHECK(read_slurm_job_id("123_4", e));
    CHECK(e.job_id == "123");
    CHECK(e.array_task == 4);
    SlurmJob p;
    CHECK(read_slurm_job_id("123_[0-5%2]", p));
    CHECK(p.array_pending == "0-5%2");
    for (const char* bad :
         {"", "12a", "123_", "123_x", "123_[a]", "123+0", "_4", "123_[]", "123_99999999999"}) {
        SlurmJob b;
        INFO(bad);
        CHECK_FALSE(read_slurm_job_id(bad, b));
    }
    CHECK(array_indexes("0-2,5%2", 6) == std::vector<std::size_t>{0, 1, 2, 5});
    CHECK_FALSE(array_indexes("0-6", 6));
    CHECK_FALSE(array_indexes("3-1", 6));
    CHECK_FALSE(array_indexes("0-5,0-5", 6));
    // squeue --array: one line per element; the parser reads them (a plain job beside them too).
    const std::string out = "77_0\x1f"
                            "COMPLETED\x1fNone\x1f"
                            "0\x1f"
                            "100\x1f"
                            "110\x1f"
                            "n1\x1f"
                            "c\x1fsweep\n"
                            "77_1\x1fRUNNING\x1fNone\x1f"
                            "0\x1f"
                            "100\x1f"
                            "200\x1f"
                            "n1\x1f"
                            "c\x1fsweep\n"
                            "77_[2-5%2]\x1fPENDING\x1fJobArrayTaskLimit\x1f"
                            "0\x1fN/A\x1fN/A\x1f\x1f"
                            "c\x1fsweep\n"
                            "78\x1fRUNNING\x1fNone\x1f"
                            "0\x1f"
                            "100\x1f"
                            "200\x1f"
                            "n1\x1f"
                            "c\x1fother\n";
    auto jobs = cli::parse_squeue(out);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 4);
    CHECK((*jobs)[0].array_task == 0);
    CHECK((*jobs)[2].array_pending == "2-5%2");
    CHECK((*jobs)[3].job_id == "78");
    CHECK(lists_every_element({(*jobs)[0], (*jobs)[1], (*jobs)[2]}, grid()));
    CHECK_FALSE(lists_every_element({(*jobs)[0], (*jobs)[2]}, grid()));
    CHECK(cli::parse_max_array_size("MaxArraySize            = 1001\nMaxJobCount = 10000\n") == 1001);
    CHECK_FALSE(cli::parse_max_array_size("MaxJobCount = 10000\n"));
    CHECK(cli::squeue_command({"77"}).find("'--array'") != std::string::npos);
}

TEST_CASE("job array: the elements fold into one update that names the failed ones") {
    const auto sweep = grid();
    auto a = line("9_0", "COMPLETED", 0), b = line("9_1", "FAILED", 3), c = line("9_2", "RUNNING"),
         d = line("9_[3-5]", "PENDING");
    auto u = array_update(sweep, {&a, &b, &c, &d}, "", "gone");
    CHECK(u.state == JobState::running);
    CHECK(u.elements == "S0,F3,R,P,P,P");
    CHECK(u.reason ==
          "6 elements: 1 SUCCEEDED, 1 FAILED, 1 RUNNING, 3 PENDING; failed: #1 lr=0.1 bs=32: exit code 3");
    CHECK(u.started_at == 1000);
    CHECK_FALSE(u.ended_at);

    // Later, squeue has forgotten the first three: their stored final states stay; the rest finished.
    auto e = line("9_3", "COMPLETED", 0), f = line("9_4", "COMPLETED", 0), g = line("9_5", "COMPLETED", 0);
    auto done = array_update(sweep, {&e, &f, &g}, "S0,F3,S0,R,P,P", "gone");
    CHECK(done.state == JobState::failed);
    CHECK(done.exit_code == 3);
    CHECK(done.elements == "S0,F3,S0,S0,S0,S0");
    CHECK(done.ended_at == 2005);

    // Only pending: the reason says why.
    auto all_pending = line("9_[0-5%2]", "PENDING");
    auto waiting = array_update(sweep, {&all_pending}, "", "gone");
    CHECK(waiting.state == JobState::pending);
    CHECK(waiting.reason == "6 elements: 6 PENDING (JobArrayTaskLimit)");

    // Nothing listed and nothing final stored: UNKNOWN with the reason given.
    auto lost = array_update(sweep, {}, "R,R,R,R,R,R", "left slurmctld");
    CHECK(lost.state == JobState::unknown);
    CHECK(lost.reason == "left slurmctld");

    // A line for an index past the sweep (someone else's array with the same id) is ignored.
    auto stray = line("9_40", "RUNNING");
    CHECK(array_update(sweep, {&stray, &a}, "", "x").elements == "S0,U,U,U,U,U");
}

TEST_CASE("job array: element output files and labelled lines") {
    CHECK(element_output("/h/tandem-x-55_%a.out", 3) == "/h/tandem-x-55_3.out");
    LinePrefix p("[lr=0.1] ");
    CHECK(p.feed("a\nb") == "[lr=0.1] a\n");
    CHECK(p.feed("c\n") == "[lr=0.1] bc\n");
    CHECK(p.feed("tail") == "");
    CHECK(p.finish() == "[lr=0.1] tail\n");
    CHECK(p.finish() == "");
}

TEST_CASE(
    "job array: slurmrestd's elements and pending indexes, v0.0.38 and v0.0.40 shapes, and the payload") {
    using nlohmann::json;
    // v0.0.38: plain numbers, NO_VAL (4294967294) for "no index" on the pending record.
    const auto v38 = json::parse(R"({"jobs": [
        {"job_id": 41, "array_job_id": 40, "array_task_id": 1, "job_state": "RUNNING", "exit_code": 0},
        {"job_id": 40, "array_job_id": 40, "array_task_id": 4294967294, "array_task_string": "2-5%2",
         "job_state": "PENDING", "state_reason": "JobArrayTaskLimit"},
        {"job_id": 39, "array_job_id": 0, "job_state": "RUNNING"}]})");
    auto jobs = api::parse_jobs(v38, ApiVersion::v0_0_38);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 3);
    CHECK((*jobs)[0].job_id == "40");
    CHECK((*jobs)[0].array_task == 1);
    CHECK((*jobs)[1].job_id == "40");
    CHECK((*jobs)[1].array_pending == "2-5%2");
    CHECK((*jobs)[2].job_id == "39");
    CHECK_FALSE((*jobs)[2].array_task);
    // v0.0.40+: {set, number} objects.
    const auto v40 = json::parse(R"({"jobs": [
        {"job_id": 52, "array_job_id": {"set": true, "infinite": false, "number": 50},
         "array_task_id": {"set": true, "infinite": false, "number": 2}, "job_state": ["COMPLETED"],
         "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "number": 0}}},
        {"job_id": 50, "array_job_id": {"set": true, "number": 50}, "array_task_id": {"set": false, "number": 0},
         "array_task_string": "3-4", "job_state": ["PENDING"]}]})");
    auto jobs40 = api::parse_jobs(v40, ApiVersion::v0_0_40);
    REQUIRE(jobs40);
    REQUIRE(jobs40->size() == 2);
    CHECK((*jobs40)[0].job_id == "50");
    CHECK((*jobs40)[0].array_task == 2);
    CHECK((*jobs40)[1].array_pending == "3-4");
    // Accounting's rows: "array": {job_id, task_id, task}.
    const auto db = json::parse(R"({"jobs": [
        {"job_id": 53, "array": {"job_id": 50, "task_id": {"set": true, "number": 3}, "task": ""},
         "state": {"current": ["FAILED"], "reason": "None"}, "exit_code": {"status": ["FAILED"],
         "return_code": {"set": true, "number": 7}}, "time": {"start": 10, "end": 20}}]})");
    auto rows = api::parse_db_jobs(db, ApiVersion::v0_0_40);
    REQUIRE(rows);
    REQUIRE(rows->size() == 1);
    CHECK((*rows)[0].job_id == "50");
    CHECK((*rows)[0].array_task == 3);

    auto plan = minimal_plan();
    plan.sweep = grid();
    plan.sweep->parallel = 3;
    CHECK(api::submit_payload("#!/bin/bash\n", plan, ApiVersion::v0_0_38)["job"]["array"] == "0-5%3");
    CHECK(api::submit_payload("#!/bin/bash\n", plan, ApiVersion::v0_0_42)["job"]["array"] == "0-5%3");
}
