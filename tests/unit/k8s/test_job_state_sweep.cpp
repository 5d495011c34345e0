// A sweep's Indexed Job as status reads it (issue 33): each completion index is an element; the Job's
// conditions alone end the sweep, the pods say each element's state.

#include <catch2/catch.hpp>

#include "backends/k8s/labels.hpp"
#include "job_state_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

json indexed(json pod, const std::string& name, int index) {
    pod["metadata"]["name"] = name;
    pod["metadata"]["annotations"][std::string(k_completion_index_annotation)] = std::to_string(index);
    pod["metadata"]["labels"] = fixture_pod("tandem-2-train-m4k9z")["metadata"]["labels"];
    return pod;
}
json succeeded(const std::string& name, int index) {
    return indexed(fixture_pod("tandem-1-hello-q8x2v"), name, index);
}
json failed(const std::string& name, int index, int code) {
    auto p = indexed(fixture_pod("tandem-2-train-m4k9z"), name, index);
    p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = code;
    return p;
}
json running(const std::string& name, int index) {
    return indexed(fixture_pod("tandem-3-serve-7hd2c"), name, index);
}

// The sweep's Job: 6 elements, `condition` (Complete, Failed) or none; annotated unless `annotated` is false.
json sweep_job(const char* condition, bool annotated = true) {
    auto j = fixture_job("tandem-2-train");
    j["status"].erase("conditions");
    j["spec"]["completionMode"] = "Indexed";
    j["spec"]["completions"] = 6;
    j["spec"]["parallelism"] = 2;
    if (annotated) {
        j["metadata"]["annotations"][std::string(k_sweep_annotation)] = "6";
    }
    if (condition != nullptr) {
        j["status"]["conditions"] = json::array(
            {{{"type", condition}, {"status", "True"}, {"lastTransitionTime", "2026-12-02T11:09:00Z"}}});
    }
    return j;
}

Sweep grid() {
    return sweep_grid({{"lr", {"0.1", "0.01"}}, {"bs", {"8", "16", "32"}}}).value();
}

} // namespace

TEST_CASE("k8s sweep: running elements, finished ones and those waiting for parallelism, in one row") {
    ViewBuilder b;
    b.job(sweep_job(nullptr))
        .pod(succeeded("e0", 0))
        .pod(succeeded("e1", 1))
        .pod(running("e2", 2))
        .pod(running("e3", 3));
    b.view.sweep = grid();
    const auto u = b.update();
    CHECK(u.state == JobState::running);
    REQUIRE(u.elements);
    CHECK(*u.elements == "S0,S0,R,R,P,P");
    CHECK_THAT(u.reason, Catch::Contains("6 elements: 2 SUCCEEDED, 2 RUNNING, 2 PENDING"));
    CHECK_FALSE(u.exit_code);
}

TEST_CASE("k8s sweep: a failed Job names the failed element; the elements it stopped are CANCELLED") {
    ViewBuilder b;
    auto stopped = running("e3", 3);
    stopped["metadata"]["deletionTimestamp"] = "2026-12-02T11:09:01Z";
    b.job(sweep_job("Failed"))
        .pod(succeeded("e0", 0))
        .pod(succeeded("e1", 1))
        .pod(failed("e2", 2, 3))
        .pod(stopped);
    b.view.sweep = grid();
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.exit_code == 3);
    CHECK(*u.elements == "S0,S0,F3,C,C,C");
    CHECK_THAT(u.reason, Catch::Contains("#2 lr=0.01 bs=8: exit code 3"));
    CHECK(u.ended_at);
}

TEST_CASE("k8s sweep: a failed element is waited on until the Job or failedIndexes says it failed") {
    ViewBuilder b;
    b.job(sweep_job(nullptr)).pod(failed("e0", 0, 3)).pod(running("e1", 1));
    b.view.sweep = grid();
    auto u = b.update();
    CHECK(u.state == JobState::running);
    CHECK(*u.elements == "P,R,P,P,P,P");
    CHECK(u.reason == "6 elements: 1 RUNNING, 5 PENDING");

    // backoffLimitPerIndex (1.29+): index 0 failed for good, the others run on.
    ViewBuilder c;
    auto job = sweep_job(nullptr);
    job["status"]["failedIndexes"] = "0";
    c.job(job).pod(failed("e0", 0, 3)).pod(running("e1", 1));
    c.view.sweep = grid();
    u = c.update();
    CHECK(u.state == JobState::running);
    CHECK(*u.elements == "F3,R,P,P,P,P");
}

TEST_CASE("k8s sweep: only the Job's Complete condition ends it; before that it is completing") {
    ViewBuilder b;
    b.job(sweep_job(nullptr));
    for (int i = 0; i < 6; ++i) {
        b.pod(succeeded("e" + std::to_string(i), i));
    }
    b.view.sweep = grid();
    auto u = b.update();
    CHECK(u.state == JobState::running);
    CHECK_THAT(u.reason, Catch::StartsWith("completing; 6 elements: 6 SUCCEEDED"));

    ViewBuilder done;
    done.job(sweep_job("Complete")).pod(succeeded("e0", 0)); // the other pods removed since
    done.view.sweep = grid();
    u = done.update();
    CHECK(u.state == JobState::succeeded);
    CHECK(u.exit_code == 0);
    CHECK(*u.elements == "S0,S0,S0,S0,S0,S0");
}

TEST_CASE("k8s sweep: a Job found on the cluster is read as a sweep by its annotation, not as 6 ranks") {
    json jobs = {{"items", json::array({sweep_job(nullptr)})}};
    json pods = {{"items", json::array({running("e0", 0)})}};
    auto views = group_by_tandem_job(jobs, pods, nullptr);
    REQUIRE(views.size() == 1);
    auto& view = views.begin()->second;
    CHECK(view.expected_ranks == 1);
    const auto u = to_job_update(view);
    CHECK(u.state == JobState::running);
    REQUIRE(u.elements);
    CHECK(*u.elements == "R,P,P,P,P,P");

    // An Indexed Job without the annotation is a multi-node job: its indexes are ranks.
    json ranks = {{"items", json::array({sweep_job(nullptr, false)})}};
    CHECK(group_by_tandem_job(ranks, pods, nullptr).begin()->second.expected_ranks == 6);
}

TEST_CASE("k8s sweep: the record's sweep means the Jobs are always read") {
    ViewBuilder b;
    b.pod(running("e0", 0));
    CHECK(pods_decide(b.view));
    b.view.sweep = grid();
    CHECK_FALSE(pods_decide(b.view));
}
