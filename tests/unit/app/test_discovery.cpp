// Discovery (app/discovery.hpp) against fake clusters: what a cluster says is the caller's and the store
// lacks is adopted once, with a stable id; someone else's job is shown, never adopted, whatever its
// identity claims; a group comes back whole and is watched, not driven; a submit hands the backend the
// job's identity. The store is real SQLite.

#include <catch2/catch.hpp>

#include "app/discovery.hpp"
#include "app/group_runner.hpp"
#include "app/submission.hpp"
#include "fake_backend.hpp"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct Fixture {
    FakeWorld world;
    TempDir dir;
    std::optional<app::Session> session;

    Fixture() {
        world.clusters["lab"] = std::make_shared<FakeCluster>();
        world.clusters["lab"]->discovery = true;
        session.emplace(fake_session(world, dir));
    }
    FakeCluster& lab() { return world.cluster("lab"); }

    std::vector<JobRecord> stored() {
        auto store = session->store();
        REQUIRE(store);
        auto all = (*store)->list(store::JobFilter{});
        REQUIRE(all);
        return *all;
    }
};

FoundJob found(const std::string& remote_id, const std::string& token, const std::string& name,
               bool callers = true, JobState state = JobState::running) {
    FoundJob f;
    f.remote_id = remote_id;
    f.owner = callers ? "me" : "bob";
    f.callers = callers;
    f.identity.token = token;
    f.identity.name = name;
    f.identity.user = "me";
    f.identity.host = "ci-runner-7";
    f.update = fake_update(state);
    f.submitted_at = 999'000;
    f.num_nodes = 2;
    return f;
}

} // namespace

TEST_CASE("a job the cluster holds for the caller is adopted once, with an id of its own") {
    Fixture f;
    f.lab().listed.push_back(found("4242", "abcdef1234", "train"));
    auto first = app::discover_jobs(*f.session, false);
    REQUIRE(first.adopted.size() == 1);
    CHECK(first.problems.empty());
    CHECK(first.me.at("lab") == "me");
    auto rows = f.stored();
    REQUIRE(rows.size() == 1);
    const JobRecord& r = rows.front();
    CHECK(r.id == first.adopted.front());
    CHECK(r.name == "train");
    CHECK(r.cluster == "lab");
    CHECK(r.backend == "slurm");
    CHECK(r.remote_id == "4242");
    CHECK(r.state == JobState::running);
    CHECK(r.num_nodes == 2);
    CHECK(r.submitted_at == 999'000);
    CHECK(r.submit_token == "abcdef1234");
    CHECK(r.spec_json.find("ci-runner-7") != std::string::npos);
    CHECK(f.world.said("launched elsewhere"));
    CHECK(f.world.said("lab: 1 job(s) found; it lists a job for an hour after it ends, so jobs that ended "
                       "before that are not found"));

    // Found again (the next status, or another at the same time): the same row, no second one.
    auto second = app::discover_jobs(*f.session, false);
    CHECK(second.adopted.empty());
    CHECK(f.stored().size() == 1);
    CHECK(f.lab().discoveries == 2);
}

TEST_CASE("a job this store launched is recognised by its token, and a moved job by its old remote id") {
    Fixture f;
    const TaskSpec spec = fake_task("train");
    auto job = app::record_job(*f.session, spec, fake_placement("lab"));
    REQUIRE(job);
    app::Failover failover(*f.session, spec, {fake_placement("lab")}, *job);
    REQUIRE(failover.submit());
    const std::string remote = f.lab().submitted.back();
    f.lab().listed.push_back(found(remote, job->submit_token, "train"));
    CHECK(app::discover_jobs(*f.session, false).adopted.empty());

    // The job moves on (failover): the copy it left is cancelled, its token is replaced in the jobs
    // table, and only the attempt keeps its remote id. Neither copy comes back as a job of its own.
    auto store = f.session->store();
    REQUIRE(store);
    store::Attempt left{0, "lab", "slurm", "p", remote, 1, 2, "cancelled"};
    store::Move move{"lab", "slurm", "{}", "", "moving", "newtoken99"};
    REQUIRE((*store)->move_job(job->id, remote, left, move, 5));
    REQUIRE((*store)->set_remote_id(job->id, "78"));
    f.lab().listed.front().update = fake_update(JobState::cancelled);
    f.lab().listed.push_back(found("78", "newtoken99", "train"));
    auto report = app::discover_jobs(*f.session, false);
    CHECK(report.adopted.empty());
    CHECK(f.stored().size() == 1);
}

TEST_CASE("another user's job is shown with --all-users and never adopted, whatever it claims") {
    Fixture f;
    // Bob's job claims to be the caller's (its identity says user me, with a token of the caller's own job).
    auto forged = found("5000", "abcdef1234", "not-yours", false);
    forged.identity.user = "me";
    f.lab().listed.push_back(forged);
    auto mine = app::discover_jobs(*f.session, false);
    CHECK(mine.adopted.empty());
    CHECK(mine.others.empty());
    auto everyone = app::discover_jobs(*f.session, true);
    CHECK(everyone.adopted.empty());
    REQUIRE(everyone.others.size() == 1);
    CHECK(everyone.others.front().owner == "bob");
    CHECK(everyone.others.front().record.name == "not-yours");
    CHECK(everyone.others.front().record.id == 0);
    CHECK(everyone.owners.at(app::owner_key("lab", "5000")) == "bob");
    CHECK(f.stored().empty());
}

TEST_CASE("a group's members bring the group back, watched and not driven") {
    Fixture f;
    f.world.clusters["k8s"] = std::make_shared<FakeCluster>();
    f.world.clusters["k8s"]->kind = BackendKind::kubernetes;
    f.world.clusters["k8s"]->discovery = true;
    f.session.emplace(fake_session(f.world, f.dir));
    auto trainer = found("300", "trainer001", "rl", true, JobState::succeeded);
    trainer.identity.group = "grp12345";
    trainer.identity.member = "trainer";
    auto rollout = found("ns/rollout-1", "rollout001", "rl", true, JobState::running);
    rollout.identity.group = "grp12345";
    rollout.identity.member = "rollout";
    f.lab().listed.push_back(trainer);
    f.world.cluster("k8s").listed.push_back(rollout);
    f.lab().states["300"] = fake_update(JobState::succeeded);
    f.world.cluster("k8s").states["ns/rollout-1"] = fake_update(JobState::running);

    auto report = app::discover_jobs(*f.session, false);
    REQUIRE(report.adopted.size() == 2);
    auto rows = f.stored();
    REQUIRE(rows.size() == 3);
    const JobRecord* group = nullptr;
    for (const auto& r : rows) {
        if (r.is_group()) {
            group = &r;
        }
    }
    REQUIRE(group != nullptr);
    CHECK(group->name == "rl");
    CHECK(group->cluster == "k8s,lab");
    CHECK(group->submit_token == "grp12345");
    for (const auto& r : rows) {
        if (!r.is_group()) {
            CHECK(r.parent_id == group->id);
            CHECK((r.member == "trainer" || r.member == "rollout"));
        }
    }
    // Looking at it does not stop the rollout although the trainer has ended: its launch decides that.
    auto refreshed = app::refresh_with_groups(*f.session, {*group});
    REQUIRE(refreshed.groups.size() == 1);
    CHECK(f.world.cluster("k8s").cancelled.empty());
    CHECK(f.lab().cancelled.empty());
    CHECK(f.world.cluster("k8s").published.empty());
}

TEST_CASE("a cluster that cannot tell is named, and the others are still asked") {
    Fixture f;
    f.world.clusters["down"] = std::make_shared<FakeCluster>();
    f.world.clusters["down"]->discovery = true;
    f.world.clusters["down"]->refresh_error = Error{ErrorKind::unavailable, "connection refused", ""};
    f.session.emplace(fake_session(f.world, f.dir));
    f.lab().listed.push_back(found("1", "abcdef1234", "train"));
    auto report = app::discover_jobs(*f.session, false);
    CHECK(report.adopted.size() == 1);
    REQUIRE(report.problems.size() == 1);
    CHECK(report.problems.front() == "cannot look for jobs launched elsewhere on down: connection refused");
    // The refresh after it does not wait for the same cluster again: its jobs are UNKNOWN at once.
    REQUIRE(f.session->unreachable("down") != nullptr);
    JobRecord stored;
    stored.id = 7;
    stored.cluster = "down";
    stored.backend = "slurm";
    stored.remote_id = "9";
    stored.state = JobState::running;
    auto views = app::refresh_jobs(*f.session, {stored});
    REQUIRE(views.size() == 1);
    CHECK(views.front().unreachable);
    CHECK(views.front().unreachable_reason == "down: connection refused");
    CHECK(f.world.cluster("down").refreshes == 0);
}

TEST_CASE("a submit hands the backend the job's identity, and a member's names its group") {
    Fixture f;
    const TaskSpec spec = fake_task("train");
    auto job = app::record_job(*f.session, spec, fake_placement("lab"));
    REQUIRE(job);
    app::Failover failover(*f.session, spec, {fake_placement("lab")}, *job);
    REQUIRE(failover.submit());
    REQUIRE(f.lab().identities.size() == 1);
    const JobIdentity& id = f.lab().identities.front();
    CHECK(id.token == job->submit_token);
    CHECK(id.name == "train");
    CHECK(id.host == "laptop");
    CHECK(id.version == k_tandem_version);
    CHECK(id.digest.size() == 12);
    CHECK(id.group.empty());

    // A member: the group row's token and name.
    auto store = f.session->store();
    REQUIRE(store);
    JobRecord group;
    group.name = "rl";
    group.backend = JobRecord::k_group_backend;
    group.cluster = "lab";
    group.spec_json = "{}";
    group.placement_json = "{}";
    group.submit_token = "grp12345";
    auto gid = (*store)->insert(group);
    REQUIRE(gid);
    auto member = app::record_job(*f.session, fake_task("trainer"), fake_placement("lab"), *gid);
    REQUIRE(member);
    const JobIdentity mid = app::identity_of(*f.session, *member);
    CHECK(mid.group == "grp12345");
    CHECK(mid.name == "rl");
    CHECK(mid.member == "trainer");
}
