// The GET /jobs skimmer must read exactly what a full parse reads, on answers recorded from the testbeds
// (v0.0.38 from Slurm 22.05; v0.0.40, v0.0.41 and v0.0.42 from Slurm 24.11), and refuse what is not JSON
// rather than guess.

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "backends/slurm/jobs_skim.hpp"
#include "backends/slurm/rest_json.hpp"
#include "backends/slurm/rest_api.hpp"

using namespace tandem;
using namespace tandem::slurm;
using nlohmann::json;

namespace {

std::string fixture_text(const std::string& version, const std::string& file) {
    const std::string path = std::string(TANDEM_FIXTURES) + "/slurm/" + version + "/" + file;
    std::ifstream in(path);
    INFO(path);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool keep_all(std::string_view) {
    return true;
}

void check_same_jobs(const std::vector<SlurmJob>& a, const std::vector<SlurmJob>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("job " << i);
        CHECK(a[i].job_id == b[i].job_id);
        CHECK(a[i].name == b[i].name);
        CHECK(a[i].state == b[i].state);
        CHECK(a[i].state_flags == b[i].state_flags);
        CHECK(a[i].state_reason == b[i].state_reason);
        CHECK(a[i].exit_code == b[i].exit_code);
        CHECK(a[i].signal == b[i].signal);
        CHECK(a[i].start_time == b[i].start_time);
        CHECK(a[i].end_time == b[i].end_time);
        CHECK(a[i].nodes == b[i].nodes);
        CHECK(a[i].comment == b[i].comment);
        CHECK(a[i].standard_output == b[i].standard_output);
    }
}

} // namespace

TEST_CASE("skimmed v0.0.38 answers recorded from the testbed read as the full parse does") {
    for (const char* file :
         {"job_raw_cancelled.json", "job_raw_held.json", "jobs.json", "job_2_failed.json"}) {
        INFO(file);
        const auto text = fixture_text("v0.0.38", file);
        auto skimmed = rest::skim_jobs(text, rest::is_job_field);
        REQUIRE(skimmed);
        auto fast = api::parse_jobs(*skimmed, ApiVersion::v0_0_38);
        auto full = api::parse_jobs(json::parse(text), ApiVersion::v0_0_38);
        REQUIRE(fast);
        REQUIRE(full);
        check_same_jobs(*fast, *full);
        // Only the kept members are built: 13 of the ~110 a 22.05 job carries.
        for (const auto& job : (*skimmed)["jobs"]) {
            for (const auto& [key, _] : job.items()) {
                CHECK(rest::is_job_field(key));
            }
        }
        if (std::string(file).rfind("job_raw", 0) == 0) { // whole answers; the others were trimmed
            CHECK(skimmed->contains("meta"));
            CHECK(skimmed->contains("errors"));
        }
    }
}

TEST_CASE("the recorded cancelled job keeps its escaped output path, token and signal") {
    const auto text = fixture_text("v0.0.38", "job_raw_cancelled.json");
    REQUIRE(text.find("\\/home\\/slurmtest") != std::string::npos); // slurmrestd escapes every '/'
    auto skimmed = rest::skim_jobs(text, rest::is_job_field);
    REQUIRE(skimmed);
    auto jobs = api::parse_jobs(*skimmed, ApiVersion::v0_0_38);
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    const auto& job = jobs->front();
    CHECK(job.job_id == "409");
    CHECK(job.state == "CANCELLED");
    CHECK(job.signal == 15);
    CHECK(job.comment == "tandem-8066807b60ee5a16");
    CHECK(job.standard_output == "/home/slurmtest/tandem-8066807b60ee5a16-%j.out");
    CHECK(job.nodes == "cpu1");
    CHECK(rest::latest_job_event(*skimmed) == 1796232747); // its end_time
}

TEST_CASE("skimmed 24.11 answers (number structs, state arrays) read as the full parse does") {
    for (const char* version : {"v0.0.40", "v0.0.41", "v0.0.42"}) {
        INFO(version);
        const auto text = fixture_text(version, "jobs.json");
        REQUIRE(text.find("\\/home\\/slurmtest") != std::string::npos); // 24.11 escapes every '/' too
        auto skimmed = rest::skim_jobs(text, rest::is_job_field);
        REQUIRE(skimmed);
        auto fast = api::parse_jobs(*skimmed, ApiVersion::v0_0_40);
        auto full = api::parse_jobs(json::parse(text), ApiVersion::v0_0_40);
        REQUIRE(fast);
        REQUIRE(full);
        REQUIRE(full->size() == 8);
        check_same_jobs(*fast, *full);
        CHECK(skimmed->contains("last_update"));
        CHECK(skimmed->contains("errors"));
        // Whole 24.11 jobs carry well over 100 members; only the kept ones are built.
        CHECK(json::parse(text)["jobs"][0].size() > 100);
        for (const auto& job : (*skimmed)["jobs"]) {
            for (const auto& [key, _] : job.items()) {
                CHECK(rest::is_job_field(key));
            }
        }
    }
}

TEST_CASE("the skimmer steps over strings holding brackets, quotes and escapes") {
    const std::string text = R"({"jobs": [
        {"junk": {"a": ["]", "}", "\"{", {"b": [[], {}]}]}, "job_id": 7, "comment": "x\"y\\z\u00e9",
         "name": "caf\u00e9 \/ bar", "skipped\"key": "]]]", "job_state": "RUNNING", "nodes": "n[1-2]"},
        {"job_id": 8, "job_state": "PENDING", "exit_code": -1e0}
    ], "errors": [{"error": "partial", "error_number": 1}]})";
    auto skimmed = rest::skim_jobs(text, rest::is_job_field);
    REQUIRE(skimmed);
    const auto& jobs = (*skimmed)["jobs"];
    REQUIRE(jobs.size() == 2);
    CHECK(jobs[0]["comment"] == "x\"y\\z\xc3\xa9");
    CHECK(jobs[0]["name"] == "caf\xc3\xa9 / bar");
    CHECK(jobs[0]["nodes"] == "n[1-2]");
    CHECK_FALSE(jobs[0].contains("junk"));
    CHECK_FALSE(jobs[0].contains("skipped\"key"));
    CHECK(jobs[1]["exit_code"] == -1.0);
    CHECK((*skimmed)["errors"][0]["error"] == "partial");
    // With every member kept, the skim equals the full parse.
    CHECK(*rest::skim_jobs(text, keep_all) == json::parse(text));
}

TEST_CASE("an answer whose jobs list is empty, absent, or holds a non-object") {
    CHECK(*rest::skim_jobs(R"({"jobs": []})", rest::is_job_field) == json{{"jobs", json::array()}});
    CHECK(*rest::skim_jobs(" { } ", rest::is_job_field) == json::object());
    auto odd = rest::skim_jobs(R"({"jobs": [3, "x", null]})", rest::is_job_field);
    REQUIRE(odd);
    CHECK((*odd)["jobs"] == json::array({3, "x", nullptr}));
    // An errors-only answer (HTTP 500 with errors[]) keeps them for response_error.
    auto errors = rest::skim_jobs(fixture_text("v0.0.38", "error_bad_token.json"), rest::is_job_field);
    REQUIRE(errors);
    CHECK(rest::response_error(*errors));
}

TEST_CASE("text that is not a whole JSON object is refused, never half read") {
    const auto good = fixture_text("v0.0.38", "job_raw_held.json");
    for (const std::string& bad :
         {std::string(), std::string("null"), std::string("[]"), std::string("{\"jobs\": [}"),
          std::string("{\"jobs\": [{\"job_id\": 1]}"), std::string("{\"jobs\": [{\"x\": {\"a\": [}}]}"),
          std::string("{\"jobs\": [{\"name\": \"unterminated}]}"), std::string("{\"jobs\": [{\"name\": \"\\"),
          std::string("{\"jobs\": [{\"name\": \"tab\there\"}]}"),
          std::string("{\"jobs\": [{\"job_id\": 01x}]}"), std::string("{\"jobs\": [{\"job_id\" 1}]}"),
          std::string("{\"jobs\": []} trailing"), std::string("{\"jobs\": [{\"job_id\": 1},]}"),
          std::string("{\"a\": 1,}"), good.substr(0, good.size() / 2), good.substr(0, good.size() - 3)}) {
        INFO(bad.substr(0, 80));
        CHECK_FALSE(rest::skim_jobs(bad, rest::is_job_field));
    }
}

TEST_CASE("latest_job_event takes the newest of the dating fields, ignoring 0 and other fields") {
    const json answer = {{"jobs",
                          {{{"submit_time", 100}, {"start_time", 0}, {"time_limit", 99999}},
                           {{"submit_time", 90}, {"last_sched_evaluation", 150}, {"end_time", 0}},
                           {{"submit_time", {{"set", true}, {"infinite", false}, {"number", 140}}}}}}};
    CHECK(rest::latest_job_event(answer) == 150);
    CHECK_FALSE(rest::latest_job_event(json{{"jobs", json::array()}}));
    CHECK_FALSE(rest::latest_job_event(json::object()));
}
