// Recoveries as a Job's pods tell them (issue 32): a failed pod that another pod of its rank replaced is
// a recovery, never the job's reason; the last attempts decide the state.

#include <catch2/catch.hpp>

#include "backends/k8s/labels.hpp"
#include "job_state_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

// The failed fixture pod (exit code 3, created 11:00:00) renamed, created at `created`, exiting `code`.
json failed_pod(const std::string& name, const std::string& created, int code) {
    auto p = fixture_pod("tandem-2-train-m4k9z");
    p["metadata"]["name"] = name;
    p["metadata"]["creationTimestamp"] = created;
    p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = code;
    return p;
}

json evicted_pod(const std::string& name, const std::string& created) {
    auto p = failed_pod(name, created, 143);
    p["status"]["conditions"] = json::array({{{"type", "DisruptionTarget"},
                                              {"status", "True"},
                                              {"reason", "EvictionByEvictionAPI"},
                                              {"message", "Eviction API: evicting"}}});
    return p;
}

json succeeded_pod(const std::string& name, const std::string& created) {
    auto p = fixture_pod("tandem-1-hello-q8x2v");
    p["metadata"]["name"] = name;
    p["metadata"]["creationTimestamp"] = created;
    p["metadata"]["labels"] = fixture_pod("tandem-2-train-m4k9z")["metadata"]["labels"];
    return p;
}

json train_job(const char* condition, const std::string& recover_codes = "") {
    auto j = fixture_job("tandem-2-train");
    j["status"].erase("conditions");
    if (condition != nullptr) {
        j["status"]["conditions"] = json::array(
            {{{"type", condition}, {"status", "True"}, {"lastTransitionTime", "2026-12-02T11:09:00Z"}}});
    }
    if (!recover_codes.empty()) {
        j["metadata"]["annotations"][std::string(k_recover_codes_annotation)] = recover_codes;
    }
    return j;
}

} // namespace

TEST_CASE("recovery: a failed pod replaced by one that succeeded is 1 recovery of a SUCCEEDED job") {
    ViewBuilder b;
    b.job(train_job("Complete"))
        .pod(failed_pod("train-a", "2026-12-02T11:00:00Z", 3))
        .pod(succeeded_pod("train-b", "2026-12-02T11:00:30Z"));
    const auto u = b.update();
    CHECK(u.state == JobState::succeeded);
    CHECK(u.exit_code == 0);
    CHECK(u.recoveries == "x3");
}

TEST_CASE("recovery: a pod failing within the second it was made still counts as replaced") {
    // Creation times have whole seconds: the replacement of a pod that failed at once shares its second.
    ViewBuilder b;
    auto running = fixture_pod("tandem-3-serve-7hd2c");
    running["metadata"]["name"] = "train-b";
    running["metadata"]["labels"] = fixture_pod("tandem-2-train-m4k9z")["metadata"]["labels"];
    running["metadata"]["creationTimestamp"] = "2026-12-02T11:00:00Z";
    b.job(train_job(nullptr)).pod(running).pod(failed_pod("train-a", "2026-12-02T11:00:00Z", 3));
    const auto u = b.update();
    CHECK(u.state == JobState::running); // the replacement runs: not "waiting for the controller"
    CHECK(u.recoveries == "x3");
}

TEST_CASE("recovery: a job that used up its restarts fails with its last attempt's exit code") {
    ViewBuilder b;
    b.job(train_job("Failed"))
        .pod(failed_pod("train-a", "2026-12-02T11:00:00Z", 3))
        .pod(failed_pod("train-b", "2026-12-02T11:01:00Z", 4));
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.exit_code == 4);
    CHECK(u.reason == "exit code 4");
    CHECK(u.recoveries == "x3"); // the last failure ended the job: not a recovery
}

TEST_CASE("recovery: two attempts made, run and ended in one second are ordered by their last write") {
    // Kubernetes 1.20 replaces a pod that fails at once without waiting: both pods carry the same
    // creation, start and end second. The replacement was written last (resourceVersion), whatever the
    // random names say: here the later attempt's name sorts first.
    auto first = failed_pod("train-zz", "2026-12-02T11:00:00Z", 3);
    auto second = failed_pod("train-aa", "2026-12-02T11:00:00Z", 5);
    first["metadata"]["resourceVersion"] = "749";
    second["metadata"]["resourceVersion"] = "757";
    for (const bool listed_first : {true, false}) {
        ViewBuilder b;
        b.job(train_job("Failed"));
        if (listed_first) {
            b.pod(first).pod(second);
        } else {
            b.pod(second).pod(first);
        }
        const auto u = b.update();
        CHECK(u.exit_code == 5);
        CHECK(u.reason == "exit code 5");
        CHECK(u.recoveries == "x3");
    }
}

TEST_CASE("recovery: evictions and recover_on_exit_codes are named apart from counted failures") {
    ViewBuilder b;
    b.job(train_job(nullptr, "7,33"))
        .pod(evicted_pod("train-a", "2026-12-02T11:00:00Z"))
        .pod(failed_pod("train-b", "2026-12-02T11:01:00Z", 7))
        .pod(failed_pod("train-c", "2026-12-02T11:02:00Z", 5))
        .pod(succeeded_pod("train-d", "2026-12-02T11:03:00Z"));
    CHECK(b.update().recoveries == "e,c7,x5");
    // A pod the kubelet evicted for node pressure (no condition, reason Evicted) is a disruption too.
    ViewBuilder k;
    auto pressure = failed_pod("train-a", "2026-12-02T11:00:00Z", 137);
    pressure["status"]["reason"] = "Evicted";
    k.job(train_job(nullptr)).pod(pressure).pod(succeeded_pod("train-b", "2026-12-02T11:03:00Z"));
    CHECK(k.update().recoveries == "e");
}

TEST_CASE("recovery: a single failed pod while the Job decides is no recovery yet") {
    ViewBuilder b;
    b.job(train_job(nullptr)).pod(failed_pod("train-a", "2026-12-02T11:00:00Z", 3));
    const auto u = b.update();
    CHECK(u.state == JobState::pending);
    CHECK_FALSE(u.recoveries);
}

TEST_CASE("recovery: a surplus pod the controller deletes as it gives up replaces nothing") {
    // Kubernetes 1.20's Job controller may make one more pod before it counts the last failure, then
    // deletes it unstarted: the last failure stays the job's reason, and no recovery more.
    ViewBuilder b;
    auto surplus = fixture_pod("tandem-5-big-r7t2k");
    surplus["metadata"]["name"] = "train-c";
    surplus["metadata"]["labels"] = fixture_pod("tandem-2-train-m4k9z")["metadata"]["labels"];
    surplus["metadata"]["creationTimestamp"] = "2026-12-02T11:02:00Z";
    surplus["metadata"]["deletionTimestamp"] = "2026-12-02T11:02:01Z";
    b.job(train_job("Failed"))
        .pod(failed_pod("train-a", "2026-12-02T11:00:00Z", 4))
        .pod(failed_pod("train-b", "2026-12-02T11:01:00Z", 4))
        .pod(surplus);
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "exit code 4");
    CHECK(u.exit_code == 4);
    CHECK(u.recoveries == "x4");
}

TEST_CASE("recovery: a pod the controller stops as the Job fails replaces nothing, even once it ran") {
    ViewBuilder b;
    auto stopped = failed_pod("train-c", "2026-12-02T11:02:00Z", 143); // TERM: the controller deleted it
    stopped["metadata"]["deletionTimestamp"] = "2026-12-02T11:02:05Z";
    stopped["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = "2026-12-02T11:02:06Z";
    b.job(train_job("Failed"))
        .pod(failed_pod("train-a", "2026-12-02T11:00:00Z", 4))
        .pod(failed_pod("train-b", "2026-12-02T11:01:00Z", 4))
        .pod(stopped);
    const auto u = b.update();
    CHECK(u.reason == "exit code 4");
    CHECK(u.exit_code == 4);
    CHECK(u.recoveries == "x4");
}

TEST_CASE("recovery: two pods that failed within one second are one recovery, not two") {
    // 1.20's Job controller made both within the second, and both ended in it.
    ViewBuilder b;
    auto a = failed_pod("train-jflr7", "2026-12-02T11:00:00Z", 4);
    auto c = failed_pod("train-8c4wc", "2026-12-02T11:00:00Z", 4);
    for (auto* p : {&a, &c}) {
        (*p)["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = "2026-12-02T11:00:00Z";
    }
    b.job(train_job("Failed")).pod(a).pod(c);
    const auto u = b.update();
    CHECK(u.reason == "exit code 4");
    CHECK(u.recoveries == "x4");
}
