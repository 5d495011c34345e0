// The submit protocol (app/submission.hpp) against fake clusters: a refusal moves the job on, a lost
// answer leaves it for `status` to settle, a pending timeout cancels and moves it, and a cancel that races
// with the submit leaves nothing running. The store is real SQLite; the clock is the test's.

#include <catch2/catch.hpp>

#include "app/launch_lock.hpp"
#include "app/submission.hpp"
#include "fake_backend.hpp"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct Fixture {
    FakeWorld world;
    TempDir dir;
    std::optional<app::Session> session;
    TaskSpec spec = fake_task("train");

    explicit Fixture(std::vector<std::string> names) {
        for (const auto& n : names) {
            world.clusters[n] = std::make_shared<FakeCluster>();
        }
        session.emplace(fake_session(world, dir));
    }

    std::vector<Placement> candidates(const std::vector<std::string>& names) const {
        std::vector<Placement> out;
        for (const auto& n : names) {
            out.push_back(fake_placement(n));
        }
        return out;
    }

    app::Failover failover(const std::vector<std::string>& names) {
        auto c = candidates(names);
        auto job = app::record_job(*session, spec, c.front());
        REQUIRE(job);
        return app::Failover(*session, spec, c, *job);
    }

    JobRecord stored(std::int64_t id) {
        auto store = session->store();
        REQUIRE(store);
        auto job = (*store)->get(id);
        REQUIRE(job);
        REQUIRE(*job);
        return **job;
    }
};

Error refusal(const std::string& why) {
    Error e{ErrorKind::remote, why};
    e.refused = true;
    return e;
}

} // namespace

TEST_CASE("a cluster that declines the submit passes the job to the next candidate, keeping the attempt") {
    Fixture f({"a", "b"});
    f.world.cluster("a").submit_answers.push_back(tl::unexpected(refusal("QOSMaxGRESPerUser")));
    auto failover = f.failover({"a", "b"});
    REQUIRE(failover.submit());
    const JobRecord job = f.stored(failover.job().id);
    CHECK(job.cluster == "b");
    CHECK(job.remote_id == "100");
    CHECK(f.world.cluster("a").submitted.empty());
    CHECK(f.world.cluster("b").submitted == std::vector<std::string>{"100"});
    auto attempts = (*f.session->store())->attempts(job.id);
    REQUIRE(attempts);
    REQUIRE(attempts->size() == 1);
    CHECK(attempts->front().cluster == "a");
    CHECK(attempts->front().outcome == "refused: QOSMaxGRESPerUser");
    CHECK(f.world.said("a/p declined job 1: QOSMaxGRESPerUser; trying b/p"));
}

TEST_CASE("when every candidate declines, the job fails saying each refusal") {
    Fixture f({"a", "b"});
    f.world.cluster("a").submit_answers.push_back(tl::unexpected(refusal("partition down")));
    f.world.cluster("b").submit_answers.push_back(tl::unexpected(refusal("over quota")));
    auto failover = f.failover({"a", "b"});
    auto submitted = failover.submit();
    REQUIRE_FALSE(submitted);
    CHECK(submitted.error().message ==
          "job 1: no cluster took it:\n  a/p: partition down\n  b/p: over quota");
    const JobRecord job = f.stored(1);
    CHECK(job.state == JobState::failed);
    CHECK(job.reason == "submit failed: every candidate declined it");
}

TEST_CASE("a submit whose answer is lost stays PENDING, and the next refresh finds what the cluster took") {
    Fixture f({"a", "b"});
    f.world.cluster("a").lose_answer = true;
    auto failover = f.failover({"a", "b"});
    auto submitted = failover.submit();
    REQUIRE_FALSE(submitted);
    CHECK(submitted.error().message == "job 1: submit to a failed: no answer within 30s");
    JobRecord job = f.stored(1);
    CHECK(job.state == JobState::pending);
    CHECK(job.remote_id.empty());
    CHECK(f.world.cluster("b").submitted.empty()); // never a second copy elsewhere

    auto views = app::refresh_jobs(*f.session, {job});
    CHECK_FALSE(views.front().unreachable);
    CHECK(views.front().record.remote_id == "100");
    CHECK(f.stored(1).remote_id == "100");
    CHECK(f.world.said("job 1: its submit's answer was lost; a holds it as 100"));
}

TEST_CASE("a submit whose answer is lost, of a job the cluster never took, fails on the next refresh") {
    Fixture f({"a"});
    f.world.cluster("a").submit_answers.push_back(
        tl::unexpected(Error{ErrorKind::unavailable, "connection reset"}));
    auto failover = f.failover({"a"});
    REQUIRE_FALSE(failover.submit());
    auto views = app::refresh_jobs(*f.session, {f.stored(1)});
    CHECK(views.front().record.state == JobState::failed);
    CHECK(views.front().record.reason == "submit failed: a did not take the job (connection reset)");
}

TEST_CASE("a job left PENDING for resources past its timeout is cancelled and moved, a held one stays") {
    Fixture f({"a", "b"});
    auto failover = f.failover({"a", "b"});
    REQUIRE(failover.submit());
    auto view = app::refresh_jobs(*f.session, {failover.job()}).front();
    REQUIRE(view.record.state == JobState::pending);

    f.world.now += 59;
    auto early = failover.move_on_if_stuck(view, 60);
    REQUIRE(early);
    CHECK_FALSE(*early);
    CHECK(f.world.cluster("a").cancelled.empty());

    f.world.cluster("a").states["100"] = fake_update(JobState::pending, "JobHeldUser");
    f.world.now += 600;
    view = app::refresh_jobs(*f.session, {failover.job()}).front();
    auto held = failover.move_on_if_stuck(view, 60);
    REQUIRE(held);
    CHECK_FALSE(*held); // held by its user: another cluster would not change that

    f.world.cluster("a").states["100"] = fake_update(JobState::pending, "Resources");
    view = app::refresh_jobs(*f.session, {failover.job()}).front();
    auto moved = failover.move_on_if_stuck(view, 60);
    REQUIRE(moved);
    CHECK(*moved);
    CHECK(f.world.cluster("a").cancelled == std::vector<std::string>{"100"});
    CHECK(f.world.cluster("b").submitted == std::vector<std::string>{"100"});
    const JobRecord job = f.stored(1);
    CHECK(job.cluster == "b");
    auto attempts = (*f.session->store())->attempts(1);
    REQUIRE(attempts);
    REQUIRE(attempts->size() == 1);
    CHECK(attempts->front().outcome == "pending 10m (Resources): cancelled");
}

TEST_CASE("a pending job whose cancel is refused stays where it is: never two live copies") {
    Fixture f({"a", "b"});
    auto failover = f.failover({"a", "b"});
    REQUIRE(failover.submit());
    f.world.cluster("a").cancel_error = Error{ErrorKind::unavailable, "slurmctld not responding"};
    f.world.now += 3600;
    auto view = app::refresh_jobs(*f.session, {failover.job()}).front();
    auto moved = failover.move_on_if_stuck(view, 60);
    REQUIRE(moved);
    CHECK_FALSE(*moved);
    CHECK(f.world.cluster("b").submitted.empty());
    CHECK(f.stored(1).cluster == "a");
    CHECK(f.world.said("but the cancel failed (slurmctld not responding); staying"));
}

TEST_CASE("a job cancelled while its submit is under way is cancelled on the cluster too") {
    Fixture f({"a"});
    f.world.cluster("a").during_submit = [&] {
        // `tandem cancel` from another process, between the submit and storing its answer.
        auto store = f.session->store();
        REQUIRE(store);
        REQUIRE((*store)->update(1, fake_update(JobState::cancelled, "cancelled by user"), f.world.now));
    };
    auto failover = f.failover({"a"});
    auto submitted = failover.submit();
    REQUIRE_FALSE(submitted);
    CHECK(submitted.error().message ==
          "job 1 was cancelled while it was being submitted; what a/p took (100) is cancelled too");
    CHECK(f.world.cluster("a").cancelled == std::vector<std::string>{"100"});
    CHECK(f.stored(1).state == JobState::cancelled);
}

TEST_CASE("a launch that died before its submit is settled by the next refresh, never submitted twice") {
    Fixture f({"a"});
    auto job = app::record_job(*f.session, f.spec, fake_placement("a"));
    REQUIRE(job);
    SECTION("while its launch holds the lock, nobody settles it") {
        auto views = app::refresh_jobs(*f.session, {*job});
        CHECK(views.front().record.state == JobState::pending);
        CHECK(f.world.cluster("a").refreshes == 0);
    }
    SECTION("the cluster holds nothing for its token: it fails, saying so") {
        app::release_launch_lock(f.session->paths().state_dir, job->submit_token); // the launch died
        auto views = app::refresh_jobs(*f.session, {*job});
        CHECK(views.front().record.state == JobState::failed);
        CHECK(views.front().record.reason == "launch interrupted before submitting");
        CHECK(f.world.cluster("a").submitted.empty());
    }
    SECTION("the cluster holds a job with its token: it is tracked from there") {
        f.world.cluster("a").by_token[job->submit_token] = "7";
        f.world.cluster("a").states["7"] = fake_update(JobState::running, "");
        app::release_launch_lock(f.session->paths().state_dir, job->submit_token);
        auto views = app::refresh_jobs(*f.session, {*job});
        CHECK(views.front().record.remote_id == "7");
        CHECK(views.front().record.state == JobState::running);
        CHECK(f.world.said("job 1: its launch was interrupted after the submit; a holds it as 7"));
    }
    SECTION("a cluster that cannot tell leaves it UNKNOWN, to be asked again") {
        app::release_launch_lock(f.session->paths().state_dir, job->submit_token);
        f.world.clusters["a"]->refresh_error = Error{ErrorKind::unavailable, "down"};
        auto views = app::refresh_jobs(*f.session, {*job});
        CHECK(views.front().record.state == JobState::pending);
        CHECK(views.front().unreachable);
        CHECK(views.front().unreachable_reason ==
              "its launch was interrupted, and a could not say whether it took the job: down");
    }
}
