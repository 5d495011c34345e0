// The group runner (app/group_runner.hpp) against fake clusters: a job group is placed and submitted
// whole, its addresses are published once every member runs, the others stop when the primaries end
// (after the termination delay) or when a member fails. The clock is the test's.

#include <catch2/catch.hpp>

#include "app/group_runner.hpp"
#include "app/launch_lock.hpp"
#include "fake_backend.hpp"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct GroupFixture {
    FakeWorld world;
    TempDir dir;
    std::optional<app::Session> session;

    GroupFixture() {
        world.clusters["a"] = std::make_shared<FakeCluster>();
        world.clusters["b"] = std::make_shared<FakeCluster>();
        world.clusters["b"]->next_id = 200;
        session.emplace(fake_session(world, dir));
    }

    // A job group: trainer on a, rollout on b (each pinned by its infra), the trainer primary.
    std::unique_ptr<app::GroupLaunch> launch(std::int64_t termination_delay) {
        TaskGroup group;
        group.source_file = "rl.yaml";
        group.name = "rl";
        group.kind = GroupKind::parallel;
        group.primary = {"trainer"};
        group.termination_delay[""] = termination_delay;
        group.members.push_back(fake_task("trainer"));
        group.members.push_back(fake_task("rollout"));
        group.members[0].resources.infra = InfraPin{"slurm", "a", ""};
        group.members[1].resources.infra = InfraPin{"slurm", "b", ""};
        auto started = app::start_group(*session, std::move(group), std::nullopt);
        REQUIRE(started);
        return std::move(*started);
    }

    void set(const std::string& cluster, const std::string& id, JobState state,
             std::optional<int> code = {}) {
        JobUpdate u = fake_update(state, "", code);
        if (is_terminal(state)) {
            u.ended_at = world.now; // as a backend reports it
        }
        world.cluster(cluster).states[id] = u;
    }

    app::GroupView look(std::int64_t group_id) {
        auto view = app::refresh_group(*session, group_id);
        REQUIRE(view);
        return *view;
    }
};

} // namespace

TEST_CASE("a job group is submitted whole and its addresses go out once every member runs") {
    GroupFixture f;
    auto launch = f.launch(0);
    CHECK(f.world.cluster("a").submitted == std::vector<std::string>{"100"});
    CHECK(f.world.cluster("b").submitted == std::vector<std::string>{"200"});
    const auto id = launch->group.id;

    f.set("a", "100", JobState::running);
    auto view = f.look(id);
    CHECK(view.group.record.reason.find("addresses not published yet") != std::string::npos);
    CHECK(f.world.cluster("a").published.empty()); // rollout has not started

    f.set("b", "200", JobState::running);
    f.world.cluster("a").hosts["100"] = {"10.0.0.1"};
    view = f.look(id);
    CHECK(f.world.cluster("a").published.empty()); // rollout's address is not known yet
    f.world.cluster("b").hosts["200"] = {"10.0.0.2"};
    view = f.look(id);
    REQUIRE(f.world.cluster("a").published.size() == 1);
    REQUIRE(f.world.cluster("b").published.size() == 1);
    const std::string book = f.world.cluster("a").published.begin()->second;
    CHECK(book.find("TANDEM_GROUP_TRAINER_HOSTS='10.0.0.1'") != std::string::npos);
    CHECK(book.find("TANDEM_GROUP_ROLLOUT_HOSTS='10.0.0.2'") != std::string::npos);
    CHECK(app::published_hosts(view.group.record).at("rollout") == std::vector<std::string>{"10.0.0.2"});
    CHECK(view.group.record.state == JobState::running);
    CHECK(f.world.said("job group 1 (rl): addresses published to its 2 members"));
}

TEST_CASE("when the primary ends, the other members stop after the termination delay") {
    GroupFixture f;
    auto launch = f.launch(30);
    const auto id = launch->group.id;
    f.set("a", "100", JobState::running);
    f.set("b", "200", JobState::running);
    f.world.cluster("a").hosts["100"] = {"10.0.0.1"};
    f.world.cluster("b").hosts["200"] = {"10.0.0.2"};
    f.look(id);

    f.set("a", "100", JobState::succeeded, 0);
    auto view = f.look(id);
    CHECK(f.world.cluster("b").cancelled.empty()); // the delay has not passed
    CHECK_FALSE(is_terminal(view.group.record.state));

    f.world.now += 31;
    view = f.look(id);
    CHECK(f.world.cluster("b").cancelled == std::vector<std::string>{"200"});
    CHECK(view.members[1].record.state == JobState::cancelled);
    CHECK(view.group.record.state == JobState::succeeded); // the primaries' outcome
    CHECK_FALSE(f.world.cluster("a").unpublished.empty()); // the addresses are taken back
}

TEST_CASE("a member that fails stops the others and fails the group") {
    GroupFixture f;
    auto launch = f.launch(600);
    const auto id = launch->group.id;
    f.set("a", "100", JobState::running);
    f.set("b", "200", JobState::failed, 3);
    auto view = f.look(id);
    CHECK(f.world.cluster("a").cancelled == std::vector<std::string>{"100"}); // no delay after a failure
    CHECK(view.group.record.state == JobState::failed);
    CHECK(view.members[0].record.state == JobState::cancelled);
}

TEST_CASE("a job group one member of which cannot be submitted is taken back whole") {
    GroupFixture f;
    Error refused{ErrorKind::remote, "partition gpu is down"};
    refused.refused = true;
    f.world.cluster("b").submit_answers.push_back(tl::unexpected(refused));
    TaskGroup group;
    group.source_file = "rl.yaml";
    group.name = "rl";
    group.kind = GroupKind::parallel;
    group.members.push_back(fake_task("trainer"));
    group.members.push_back(fake_task("rollout"));
    group.members[0].resources.infra = InfraPin{"slurm", "a", ""};
    group.members[1].resources.infra = InfraPin{"slurm", "b", ""};
    auto started = app::start_group(*f.session, std::move(group), std::nullopt);
    REQUIRE_FALSE(started);
    CHECK(started.error().message ==
          "job group rl (job 1): job 3: submit to b failed: partition gpu is down");
    CHECK(f.world.cluster("a").cancelled == std::vector<std::string>{"100"});
    auto row = (*f.session->store())->get(1);
    REQUIRE(row);
    CHECK((*row)->state == JobState::failed);
}

TEST_CASE("a group whose launch died before recording every member is settled FAILED, its members stopped") {
    GroupFixture f;
    auto store = f.session->store();
    REQUIRE(store);
    TaskGroup group;
    group.name = "rl";
    group.kind = GroupKind::parallel;
    group.members.push_back(fake_task("trainer"));
    group.members.push_back(fake_task("rollout"));
    const GroupHeader header = header_of(group, "grp12345");
    JobRecord row;
    row.name = "rl";
    row.backend = JobRecord::k_group_backend;
    row.cluster = "a,b";
    row.state = JobState::pending;
    row.spec_json = to_json(header).dump();
    row.placement_json = "{}";
    row.submit_token = header.token;
    auto gid = (*store)->insert(row);
    REQUIRE(gid);
    // One member recorded (and, say, submitted and running), the other never recorded.
    JobRecord member;
    member.name = member.member = "trainer";
    member.parent_id = *gid;
    member.cluster = "a";
    member.backend = "slurm";
    member.remote_id = "100";
    member.state = JobState::running;
    member.spec_json = member.placement_json = "{}";
    REQUIRE((*store)->insert(member));
    f.set("a", "100", JobState::running);

    // While its launch holds the group's lock, it is still recording: left alone.
    REQUIRE(app::hold_launch_lock(f.session->paths().state_dir, header.token));
    auto view = f.look(*gid);
    CHECK(view.group.record.state == JobState::pending);
    CHECK(f.world.cluster("a").cancelled.empty());

    // Its launch is gone: the group fails, saying why, and what it recorded is stopped.
    app::release_launch_lock(f.session->paths().state_dir, header.token);
    view = f.look(*gid);
    CHECK(view.group.record.state == JobState::failed);
    CHECK(view.group.record.reason == "launch interrupted after recording 1 of its 2 members");
    CHECK(f.world.cluster("a").cancelled == std::vector<std::string>{"100"});
}
