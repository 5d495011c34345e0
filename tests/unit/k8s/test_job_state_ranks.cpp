// Multi-rank jobs (one Job per rank, or one Indexed Job) and grouping a namespace's lists.

#include <catch2/catch.hpp>

#include "job_state_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

// The running per-rank fixture pod of rank 0, or a copy of it made rank `rank` and `phase`.
json rank_pod(int rank) {
    auto p = fixture_pod("tandem-4-ddp-0-b2n5w");
    p["metadata"]["name"] = "tandem-4-ddp-" + std::to_string(rank) + "-b2n5w";
    p["metadata"]["labels"]["tandem.dev/rank"] = std::to_string(rank);
    p["metadata"]["labels"]["job-name"] = "tandem-4-ddp-" + std::to_string(rank);
    return p;
}

json rank_job(int rank, const char* condition) {
    auto j = fixture_job("tandem-4-ddp-0");
    j["metadata"]["name"] = "tandem-4-ddp-" + std::to_string(rank);
    j["metadata"]["labels"]["tandem.dev/rank"] = std::to_string(rank);
    if (condition != nullptr) {
        j["status"]["conditions"] = json::array(
            {{{"type", condition}, {"status", "True"}, {"lastTransitionTime", "2026-12-02T13:05:00Z"}}});
        j["status"]["completionTime"] = "2026-12-02T13:05:00Z";
    }
    return j;
}

json pending_pod(int rank) {
    auto p = rank_pod(rank);
    const auto unschedulable = fixture_pod("tandem-5-big-r7t2k");
    p["spec"].erase("nodeName");
    p["status"] = unschedulable["status"];
    return p;
}

} // namespace

TEST_CASE("ranks: a failed rank fails the job and is named") {
    ViewBuilder b;
    b.job(fixture_job("tandem-4-ddp-0"))
        .job(fixture_job("tandem-4-ddp-1"))
        .pod(fixture_pod("tandem-4-ddp-0-b2n5w"))
        .pod(fixture_pod("tandem-4-ddp-1-x9c4r"))
        .ranks(2);
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "rank 1: exit code 3");
    CHECK(u.exit_code == 3);
    CHECK(u.started_at == 1796216406); // rank 0's start, the earliest
    CHECK(u.ended_at == 1796216500);   // rank 1's finishedAt
}

TEST_CASE("ranks: running when any rank runs, the reason names a rank still waiting") {
    ViewBuilder b;
    b.job(rank_job(0, nullptr)).job(rank_job(1, nullptr)).pod(rank_pod(0)).pod(pending_pod(1)).ranks(2);
    const auto u = b.update();
    CHECK(u.state == JobState::running);
    CHECK(u.reason == "rank 1: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
    CHECK(u.started_at == 1796216406);

    ViewBuilder all;
    all.job(rank_job(0, nullptr)).job(rank_job(1, nullptr)).pod(rank_pod(0)).pod(rank_pod(1)).ranks(2);
    CHECK(all.update().state == JobState::running);
    CHECK(all.update().reason.empty());
}

TEST_CASE("ranks: pending while no rank runs, naming the first waiting rank") {
    ViewBuilder b;
    b.job(rank_job(0, nullptr)).job(rank_job(1, nullptr)).pod(pending_pod(0)).pod(pending_pod(1)).ranks(2);
    CHECK(b.update().state == JobState::pending);
    CHECK(b.update().reason == "rank 0: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
    CHECK_FALSE(b.update().started_at);
}

TEST_CASE("ranks: succeeded only when every rank's Job is Complete") {
    ViewBuilder done;
    done.job(rank_job(0, "Complete")).job(rank_job(1, "Complete")).ranks(2);
    CHECK(done.update().state == JobState::succeeded);
    CHECK(done.update().exit_code == 0);
    CHECK(done.update().ended_at == 1796216700);

    ViewBuilder half;
    half.job(rank_job(0, "Complete")).job(rank_job(1, nullptr)).pod(rank_pod(1)).ranks(2);
    CHECK(half.update().state == JobState::running);

    // num_nodes 3 but only two rank Jobs listed: never SUCCEEDED on a missing rank.
    ViewBuilder missing;
    missing.job(rank_job(0, "Complete")).job(rank_job(1, "Complete")).ranks(3);
    CHECK(missing.update().state == JobState::pending);
    CHECK(missing.update().reason == "rank 2: its Kubernetes Job is missing");
}

TEST_CASE("ranks: every pod ended well but the Job is not Complete yet -> RUNNING completing") {
    auto job = fixture_job("tandem-1-hello");
    job["status"].erase("conditions");
    job["status"].erase("completionTime");
    ViewBuilder b;
    b.job(job).pod(fixture_pod("tandem-1-hello-q8x2v"));
    CHECK(b.update().state == JobState::running);
    CHECK(b.update().reason == "completing");
}

TEST_CASE("ranks: an Indexed Job gives ranks by completion index") {
    auto job = fixture_job("tandem-2-train");
    job["spec"]["completionMode"] = "Indexed";
    job["spec"]["completions"] = 2;
    job["spec"]["parallelism"] = 2;
    auto ok = fixture_pod("tandem-1-hello-q8x2v");
    ok["metadata"]["annotations"] = {{"batch.kubernetes.io/job-completion-index", "0"}};
    auto bad = fixture_pod("tandem-2-train-m4k9z");
    bad["metadata"]["annotations"] = {{"batch.kubernetes.io/job-completion-index", "1"}};
    ViewBuilder b;
    b.job(job).pod(ok).pod(bad).ranks(2);
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "rank 1: exit code 3");
    CHECK(u.exit_code == 3);

    job["status"] = fixture_job("tandem-3-serve")["status"];
    auto running = fixture_pod("tandem-3-serve-7hd2c");
    running["metadata"]["annotations"] = {{"batch.kubernetes.io/job-completion-index", "1"}};
    ViewBuilder r;
    r.job(job).pod(ok).pod(running).ranks(2);
    CHECK(r.update().state == JobState::running);
    CHECK(r.update().reason.empty());
}

TEST_CASE("group: a namespace's lists grouped by tandem.dev/job") {
    const auto groups = group_by_tandem_job(status_jobs(), status_pods(), &status_events());
    std::vector<std::string> keys;
    for (const auto& [key, view] : groups) {
        keys.push_back(key);
    }
    CHECK(keys == std::vector<std::string>{"tandem-1-hello", "tandem-2-train", "tandem-3-serve",
                                           "tandem-4-ddp", "tandem-5-big"});
    const auto& ddp = groups.at("tandem-4-ddp");
    CHECK(ddp.jobs.size() == 2);
    CHECK(ddp.pods.size() == 2);
    CHECK(ddp.expected_ranks == 2);
    CHECK(groups.at("tandem-1-hello").expected_ranks == 1);
    CHECK(groups.at("tandem-1-hello").events.size() == 1);
    CHECK(groups.at("tandem-5-big").events.size() == 1);
    CHECK(groups.at("tandem-3-serve").events.empty());

    // The whole namespace in one pass, as `status` does it.
    CHECK(to_job_update(groups.at("tandem-1-hello")).state == JobState::succeeded);
    CHECK(to_job_update(groups.at("tandem-2-train")).reason == "exit code 3");
    CHECK(to_job_update(groups.at("tandem-3-serve")).state == JobState::running);
    CHECK(to_job_update(groups.at("tandem-4-ddp")).reason == "rank 1: exit code 3");
    CHECK(to_job_update(groups.at("tandem-5-big")).state == JobState::pending);
}

TEST_CASE("group: an Indexed Job's completions are its ranks, no event list is fine") {
    auto job = fixture_job("tandem-3-serve");
    job["spec"]["completionMode"] = "Indexed";
    job["spec"]["completions"] = 4;
    const json jobs = {{"items", json::array({job})}};
    const auto groups = group_by_tandem_job(jobs, json::object(), nullptr);
    REQUIRE(groups.size() == 1);
    CHECK(groups.at("tandem-3-serve").expected_ranks == 4);
    CHECK(groups.at("tandem-3-serve").pods.empty());
}
