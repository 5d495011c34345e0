#include <catch2/catch.hpp>

#include "job_state_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

// Unix times of the fixtures' timestamps.
constexpr std::int64_t t_10_00_03 = 1796205603;
constexpr std::int64_t t_10_00_09 = 1796205609;
constexpr std::int64_t t_11_00_04 = 1796209204;
constexpr std::int64_t t_11_00_19 = 1796209219;
constexpr std::int64_t t_11_00_20 = 1796209220;
constexpr std::int64_t t_12_00_05 = 1796212805;

TEST_CASE("state: Complete -> SUCCEEDED with exit code 0, started and ended") {
    ViewBuilder b;
    b.job(fixture_job("tandem-1-hello")).pod(fixture_pod("tandem-1-hello-q8x2v"));
    const auto u = b.update();
    CHECK(u.state == JobState::succeeded);
    CHECK(u.reason == "exit code 0");
    CHECK(u.exit_code == 0);
    CHECK(u.started_at == t_10_00_03);
    CHECK(u.ended_at == t_10_00_09); // the Job's completionTime, not the container's finishedAt
}

TEST_CASE("state: BackoffLimitExceeded -> FAILED with the pod's exit code") {
    ViewBuilder b;
    b.job(fixture_job("tandem-2-train")).pod(fixture_pod("tandem-2-train-m4k9z"));
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "exit code 3");
    CHECK(u.exit_code == 3);
    CHECK(u.started_at == t_11_00_04);
    CHECK(u.ended_at == t_11_00_19); // no completionTime on failure: the container's finishedAt
}

TEST_CASE("state: BackoffLimitExceeded without pods left -> the condition's reason") {
    ViewBuilder b;
    b.job(fixture_job("tandem-2-train"));
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "BackoffLimitExceeded");
    CHECK_FALSE(u.exit_code);
    CHECK_FALSE(u.started_at);
    CHECK(u.ended_at == t_11_00_20); // when the Failed condition was set
}

TEST_CASE("state: DeadlineExceeded -> FAILED without the killed pod's code") {
    auto job = fixture_job("tandem-2-train");
    job["status"]["conditions"][0]["reason"] = "DeadlineExceeded";
    job["status"]["conditions"][0]["message"] = "Job was active longer than specified deadline";
    auto pod = fixture_pod("tandem-2-train-m4k9z");
    pod["status"]["containerStatuses"][0]["state"] =
        terminated(137, "Error", "2026-12-02T11:00:04Z", "2026-12-02T11:00:19Z");
    ViewBuilder b;
    b.job(job).pod(pod);
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "DeadlineExceeded");
    CHECK_FALSE(u.exit_code);
    CHECK(u.started_at == t_11_00_04);
}

TEST_CASE("state: OOMKilled -> FAILED OOMKilled with exit code 137") {
    auto pod = fixture_pod("tandem-2-train-m4k9z");
    pod["status"]["containerStatuses"][0]["state"] =
        terminated(137, "OOMKilled", "2026-12-02T11:00:04Z", "2026-12-02T11:00:19Z");
    ViewBuilder b;
    b.job(fixture_job("tandem-2-train")).pod(pod);
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "OOMKilled");
    CHECK(u.exit_code == 137);
}

TEST_CASE("state: an evicted pod explains the failure with Kubernetes' message") {
    auto pod = fixture_pod("tandem-2-train-m4k9z");
    pod["status"].erase("containerStatuses");
    pod["status"]["reason"] = "Evicted";
    pod["status"]["message"] = "The node was low on resource: memory. ";
    ViewBuilder b;
    b.job(fixture_job("tandem-2-train")).pod(pod);
    const auto u = b.update();
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "Evicted: The node was low on resource: memory.");
    CHECK_FALSE(u.exit_code);
}

TEST_CASE("state: Unschedulable -> PENDING with the scheduler's message") {
    ViewBuilder b;
    b.job(fixture_job("tandem-5-big")).pod(fixture_pod("tandem-5-big-r7t2k"));
    const auto u = b.update();
    CHECK(u.state == JobState::pending);
    CHECK(u.reason == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
    CHECK_FALSE(u.exit_code);
    CHECK_FALSE(u.started_at);
    CHECK_FALSE(u.ended_at);
}

TEST_CASE("state: no PodScheduled condition -> the latest FailedScheduling event") {
    auto pod = fixture_pod("tandem-5-big-r7t2k");
    pod["status"].erase("conditions");
    auto older = k8s_item(status_events(), "tandem-5-big-r7t2k.17c3a9e4b2f1d0a1");
    older["message"] = "0/3 nodes are available: 3 node(s) had taint {a: b}, that the pod didn't tolerate.";
    older["lastTimestamp"] = "2026-12-02T13:59:00Z";
    ViewBuilder b;
    b.job(fixture_job("tandem-5-big"))
        .pod(pod)
        .event(k8s_item(status_events(), "tandem-5-big-r7t2k.17c3a9e4b2f1d0a1"))
        .event(older);
    CHECK(b.update().state == JobState::pending);
    CHECK(b.update().reason == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");

    ViewBuilder none;
    none.job(fixture_job("tandem-5-big")).pod(pod);
    CHECK(none.update().reason == "waiting for the scheduler");
}

TEST_CASE("state: image pull failures keep PENDING and say so") {
    for (const char* reason : {"ImagePullBackOff", "ErrImagePull"}) {
        ViewBuilder b;
        b.job(fixture_job("tandem-3-serve")).pod(pod_waiting(reason, "Back-off pulling image \"nope:1\""));
        const auto u = b.update();
        CHECK(u.state == JobState::pending);
        CHECK(u.reason == std::string(reason) + ": Back-off pulling image \"nope:1\"");
        CHECK_FALSE(u.started_at);
    }
}

TEST_CASE("state: CreateContainerConfigError (a missing Secret) -> PENDING with the message") {
    ViewBuilder b;
    b.job(fixture_job("tandem-3-serve"))
        .pod(pod_waiting("CreateContainerConfigError", "secret \"tandem-3-secrets\" not found"));
    const auto u = b.update();
    CHECK(u.state == JobState::pending);
    CHECK(u.reason == "CreateContainerConfigError: secret \"tandem-3-secrets\" not found");
}

TEST_CASE("state: a scheduled pod creating its container -> STARTING") {
    ViewBuilder b;
    b.job(fixture_job("tandem-3-serve")).pod(pod_waiting("ContainerCreating", ""));
    const auto u = b.update();
    CHECK(u.state == JobState::starting);
    CHECK(u.reason == "ContainerCreating");
}

TEST_CASE("state: a Running pod -> RUNNING, started at the container's start") {
    ViewBuilder b;
    b.job(fixture_job("tandem-3-serve")).pod(fixture_pod("tandem-3-serve-7hd2c"));
    const auto u = b.update();
    CHECK(u.state == JobState::running);
    CHECK(u.reason.empty());
    CHECK(u.started_at == t_12_00_05);
    CHECK_FALSE(u.ended_at);
    CHECK_FALSE(u.exit_code);
}

TEST_CASE("state: CrashLoopBackOff is shown with the last exit code") {
    auto pod = fixture_pod("tandem-3-serve-7hd2c");
    auto& c = pod["status"]["containerStatuses"][0];
    c["lastState"] = terminated(1, "Error", "2026-12-02T12:00:05Z", "2026-12-02T12:00:06Z");
    c["state"] = waiting("CrashLoopBackOff", "back-off 10s restarting failed container=main");
    c["restartCount"] = 1;
    ViewBuilder b;
    b.job(fixture_job("tandem-3-serve")).pod(pod);
    const auto u = b.update();
    CHECK(u.state == JobState::running);
    CHECK(u.reason == "CrashLoopBackOff: back-off 10s restarting failed container=main (last exit code 1)");
    CHECK(u.started_at == t_12_00_05);
}

TEST_CASE("state: a failed pod whose Job has not failed yet -> PENDING, the controller decides") {
    auto job = fixture_job("tandem-2-train");
    job["status"].erase("conditions");
    ViewBuilder b;
    b.job(job).pod(fixture_pod("tandem-2-train-m4k9z"));
    const auto u = b.update();
    CHECK(u.state == JobState::pending);
    CHECK(u.reason == "exit code 3; waiting for the Job controller to retry or fail it");
    CHECK_FALSE(u.exit_code);
}

TEST_CASE("state: a retry's newer pod is the rank's state") {
    auto job = fixture_job("tandem-2-train");
    job["status"].erase("conditions");
    auto retry = fixture_pod("tandem-3-serve-7hd2c");
    retry["metadata"]["creationTimestamp"] = "2026-12-02T11:00:30Z";
    retry["metadata"]["labels"] = fixture_pod("tandem-2-train-m4k9z")["metadata"]["labels"];
    ViewBuilder b;
    b.job(job).pod(retry).pod(fixture_pod("tandem-2-train-m4k9z"));
    const auto u = b.update();
    CHECK(u.state == JobState::running);
    CHECK(u.started_at == t_11_00_04); // the first attempt's start
}

TEST_CASE("state: a Job without pods -> PENDING, with the Job's FailedCreate event when there is one") {
    ViewBuilder quiet;
    quiet.job(fixture_job("tandem-3-serve"));
    CHECK(quiet.update().state == JobState::pending);
    CHECK(quiet.update().reason == "waiting for the Job controller to create the pod");

    json ev = {{"involvedObject", {{"kind", "Job"}, {"name", "tandem-3-serve"}}},
               {"reason", "FailedCreate"},
               {"lastTimestamp", "2026-12-02T12:00:01Z"},
               {"message",
                "Error creating: pods \"tandem-3-serve-\" is forbidden: exceeded quota: gpu-quota, "
                "requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: "
                "requests.nvidia.com/gpu=8"}};
    ViewBuilder b;
    b.job(fixture_job("tandem-3-serve")).event(ev);
    CHECK(b.update().state == JobState::pending);
    CHECK(b.update().reason == ev["message"].get<std::string>());
}

TEST_CASE("state: no Job listed -> UNKNOWN, the caller decides") {
    ViewBuilder none;
    CHECK(none.update().state == JobState::unknown);
    CHECK(none.update().reason == "the Kubernetes Job is gone (deleted, or removed after it ended)");
    ViewBuilder orphans;
    orphans.pod(fixture_pod("tandem-3-serve-7hd2c"));
    CHECK(orphans.update().state == JobState::unknown);
    CHECK(orphans.update().reason == "the Kubernetes Job is gone but its pods remain");
}

TEST_CASE("state: a Job being deleted is reported as seen, and says so") {
    auto job = fixture_job("tandem-3-serve");
    job["metadata"]["deletionTimestamp"] = "2026-12-02T12:05:00Z";
    job["metadata"]["deletionGracePeriodSeconds"] = 0;
    ViewBuilder b;
    b.job(job).pod(fixture_pod("tandem-3-serve-7hd2c"));
    CHECK(b.update().state == JobState::running);
    CHECK(b.update().reason == "the Job is being deleted");
}

TEST_CASE("state: a suspended Job -> PENDING") {
    auto job = fixture_job("tandem-3-serve");
    job["status"]["conditions"] = json::array({{{"type", "Suspended"},
                                                {"status", "True"},
                                                {"reason", "JobSuspended"},
                                                {"message", "Job suspended"}}});
    ViewBuilder b;
    b.job(job);
    CHECK(b.update().state == JobState::pending);
    CHECK(b.update().reason == "the Job is suspended");
}

TEST_CASE("state: the Phase Unknown of a lost node -> UNKNOWN") {
    auto pod = fixture_pod("tandem-3-serve-7hd2c");
    pod["status"]["phase"] = "Unknown";
    ViewBuilder b;
    b.job(fixture_job("tandem-3-serve")).pod(pod);
    CHECK(b.update().state == JobState::unknown);
    CHECK(b.update().reason == "pod state Unknown: node gpu-h100-1 is not reporting");
}

TEST_CASE("state: RFC 3339 times") {
    CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == 0);
    CHECK(parse_rfc3339("1969-12-31T23:59:59Z") == -1);
    CHECK(parse_rfc3339("2000-02-29T23:59:59Z") == 951868799);
    CHECK(parse_rfc3339("2026-12-02T10:00:03Z") == t_10_00_03);
    CHECK(parse_rfc3339("2026-12-02T10:00:03.123456Z") == t_10_00_03); // MicroTime
    CHECK(parse_rfc3339("2026-12-02T12:00:03+02:00") == t_10_00_03);
    CHECK(parse_rfc3339("2026-12-02T05:30:03-04:30") == t_10_00_03);
    CHECK(parse_rfc3339("2026-12-02t10:00:03z") == t_10_00_03);
    for (const char* bad : {"", "2026-12-02", "2026-12-02T10:00:03", "2026-13-02T10:00:03Z",
                            "2026-12-02T24:00:00Z", "2026-12-02T10:00:03.Z", "2026-12-02T10:00:03+0200",
                            "2026-12-02T10:00:03Zjunk", "2026/12/02T10:00:03Z", "2026-12-02T10:0a:03Z"}) {
        INFO(bad);
        CHECK_FALSE(parse_rfc3339(bad));
    }
}
