// The mappers on lists recorded from the v1.20 testbed (scripts/testbed/k8s): one namespace holding a
// finished, a failed (exit 3), a running, an unschedulable (16 GPUs), a missing-Secret and a two-rank job
// whose rank 1 exited 3. Recorded with `kubectl get jobs,pods,events -o json`, managedFields removed.

#include <catch2/catch.hpp>

#include "backends/k8s/job_state.hpp"
#include "k8s_fixtures.hpp"

using namespace tandem;
using namespace tandem::k8s;

TEST_CASE("state recorded: every job of the namespace mapped") {
    const auto jobs = k8s_fixture("recorded-v1.20/jobs.json");
    const auto pods = k8s_fixture("recorded-v1.20/pods.json");
    const auto events = k8s_fixture("recorded-v1.20/events.json");
    const auto groups = group_by_tandem_job(jobs, pods, &events);
    REQUIRE(groups.size() == 6);

    const auto hello = to_job_update(groups.at("tandem-1-hello"));
    CHECK(hello.state == JobState::succeeded);
    CHECK(hello.exit_code == 0);
    CHECK(hello.started_at == 1796229354);
    CHECK(hello.ended_at == 1796229355);

    const auto train = to_job_update(groups.at("tandem-2-train"));
    CHECK(train.state == JobState::failed);
    CHECK(train.reason == "exit code 3");
    CHECK(train.exit_code == 3);
    CHECK(train.ended_at == 1796229355);

    const auto serve = to_job_update(groups.at("tandem-3-serve"));
    CHECK(serve.state == JobState::running);
    CHECK(serve.reason.empty());
    CHECK(serve.started_at == 1796229354);

    const auto ddp = groups.at("tandem-4-ddp");
    CHECK(ddp.expected_ranks == 2);
    const auto ddp_update = to_job_update(ddp);
    CHECK(ddp_update.state == JobState::failed);
    CHECK(ddp_update.reason == "rank 1: exit code 3");
    CHECK(ddp_update.exit_code == 3);
    CHECK(ddp_update.ended_at == 1796229357);

    const auto big = to_job_update(groups.at("tandem-5-big"));
    CHECK(big.state == JobState::pending);
    CHECK(big.reason == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");

    const auto secret = to_job_update(groups.at("tandem-6-secret"));
    CHECK(secret.state == JobState::pending);
    CHECK(secret.reason == "CreateContainerConfigError: secret 'tandem-6-secrets' not found");
}

TEST_CASE("state recorded: the pods alone decide live jobs, and give the same state as with the Jobs") {
    const auto jobs = k8s_fixture("recorded-v1.20/jobs.json");
    const auto pods = k8s_fixture("recorded-v1.20/pods.json");
    const auto with_jobs = group_by_tandem_job(jobs, pods, nullptr);
    const nlohmann::json no_jobs = {{"items", nlohmann::json::array()}};
    const auto pods_only = group_by_tandem_job(no_jobs, pods, nullptr);

    // Running, unschedulable (Pending) and waiting for a Secret: live pods, so the pods decide.
    for (const char* live : {"tandem-3-serve", "tandem-5-big", "tandem-6-secret"}) {
        INFO(live);
        auto view = pods_only.at(live);
        CHECK(pods_decide(view));
        view.jobs_unread = true;
        const auto alone = to_job_update(view);
        const auto full = to_job_update(with_jobs.at(live));
        CHECK(alone.state == full.state);
        CHECK(alone.reason == full.reason);
        CHECK(alone.started_at == full.started_at);
    }
    // Ended pods need the Job's conditions.
    CHECK_FALSE(pods_decide(pods_only.at("tandem-1-hello")));
    CHECK_FALSE(pods_decide(pods_only.at("tandem-2-train")));
    // A rank without a pod needs the Jobs too.
    auto serve = pods_only.at("tandem-3-serve");
    serve.expected_ranks = 2;
    CHECK_FALSE(pods_decide(serve));
    // Not read is not gone: an empty view whose Jobs were not read is still UNKNOWN only when it has no pods.
    JobView gone;
    CHECK(to_job_update(gone).state == JobState::unknown);
}
