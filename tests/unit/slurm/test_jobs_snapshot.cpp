// Incremental refresh snapshots: which update_time is sent, and when a snapshot may answer a refresh.

#include <catch2/catch.hpp>

#include "backends/slurm/jobs_snapshot.hpp"

using namespace tandem::slurm;
using nlohmann::json;

namespace {

const json k_answer = {{"jobs",
                        {{{"job_id", 11}, {"job_state", "RUNNING"}},
                         {{"job_id", 12}, {"job_state", "PENDING"}},
                         {{"job_id", 13}, {"job_state", "COMPLETED"}}}}};

} // namespace

TEST_CASE("update_time is the earlier of the answer's own clock and the local send time") {
    // The answer mentions an event at 1000: slurmctld wrote it at 1000 or later.
    CHECK(snapshot_since(5000, 1000) == 1001);
    // A recent event: the local bound (sent at 1002, less a second) is the earlier.
    CHECK(snapshot_since(1002, 1005) == 1001);
    CHECK(snapshot_since(1002, std::nullopt) == 1001);
}

TEST_CASE("a snapshot keeps only the asked-for jobs and answers only for jobs it covers") {
    const auto file = make_snapshot("http://c:6820", "v0.0.38", 1001, k_answer, {"11", "13", "99"});
    CHECK(file["since"] == 1001);
    REQUIRE(file["jobs"].size() == 2); // 99 was not in the answer, 12 was not asked for
    CHECK(file["jobs"][0]["job_id"] == 11);
    CHECK(file["jobs"][1]["job_id"] == 13);

    auto read = read_snapshot(file, "http://c:6820", "v0.0.38", {"13", "11"});
    REQUIRE(read);
    CHECK(read->since == 1001);
    CHECK(read->answer["jobs"].size() == 2);
    CHECK(read->answer["jobs"][0]["job_state"] == "RUNNING");

    // A job it does not hold (never seen, or absent from the full answer) means a full refresh.
    CHECK_FALSE(read_snapshot(file, "http://c:6820", "v0.0.38", {"11", "12"}));
    CHECK_FALSE(read_snapshot(file, "http://c:6820", "v0.0.38", {"99"}));
    CHECK_FALSE(read_snapshot(file, "http://c:6820", "v0.0.38", {}));
    CHECK_FALSE(read_snapshot(file, "http://c:6820", "v0.0.38", {""}));
}

TEST_CASE("a snapshot from another server, API version, or a damaged file is not used") {
    const auto file = make_snapshot("http://c:6820", "v0.0.38", 1001, k_answer, {"11"});
    CHECK_FALSE(read_snapshot(file, "http://other:6820", "v0.0.38", {"11"}));
    CHECK_FALSE(read_snapshot(file, "http://c:6820", "v0.0.40", {"11"}));
    auto no_since = file;
    no_since.erase("since");
    CHECK_FALSE(read_snapshot(no_since, "http://c:6820", "v0.0.38", {"11"}));
    auto zero = file;
    zero["since"] = 0;
    CHECK_FALSE(read_snapshot(zero, "http://c:6820", "v0.0.38", {"11"}));
    auto bad_jobs = file;
    bad_jobs["jobs"] = "x";
    CHECK_FALSE(read_snapshot(bad_jobs, "http://c:6820", "v0.0.38", {"11"}));
    CHECK_FALSE(read_snapshot(json::parse("[1]"), "http://c:6820", "v0.0.38", {"11"}));
    CHECK_FALSE(read_snapshot(json(), "http://c:6820", "v0.0.38", {"11"}));
}
