// What a launched pipeline or job group does next (core/job_group.hpp), its address book and its stored
// header: pure logic, members given as the store would hold them.

#include <catch2/catch.hpp>

#include "core/job_group.hpp"

using namespace tandem;

namespace {

GroupHeader parallel_group(std::vector<std::string> primary = {}, std::int64_t delay = 0) {
    GroupHeader h;
    h.name = "rl";
    h.kind = GroupKind::parallel;
    h.members = {"trainer", "rollout", "replay-buffer"};
    h.primary = std::move(primary);
    if (delay) {
        h.termination_delay[""] = delay;
    }
    h.token = "0badcafe";
    return h;
}

GroupHeader pipeline(std::size_t stages) {
    GroupHeader h;
    h.name = "pipe";
    h.kind = GroupKind::pipeline;
    for (std::size_t i = 0; i < stages; ++i) {
        h.members.push_back("stage" + std::to_string(i + 1));
    }
    h.token = "12345678";
    return h;
}

JobRecord member(const std::string& name, JobState state, std::optional<std::int64_t> ended = std::nullopt,
                 std::optional<int> exit_code = std::nullopt, bool submitted = true) {
    JobRecord r;
    r.member = name;
    r.name = name;
    r.state = state;
    r.remote_id = submitted ? "id-" + name : "";
    if (state != JobState::pending) {
        r.started_at = 100;
    }
    r.ended_at = ended;
    r.exit_code = exit_code;
    r.reason = exit_code ? "exit code " + std::to_string(*exit_code) : "";
    return r;
}

std::vector<std::size_t> stopped(const GroupStep& step) {
    std::vector<std::size_t> out;
    for (const auto& s : step.stop) {
        out.push_back(s.first);
    }
    return out;
}

} // namespace

TEST_CASE("a job group runs while its members run, pending until one starts") {
    const auto h = parallel_group();
    auto step = next_step(h, {member("trainer", JobState::pending), member("rollout", JobState::pending),
                              member("replay-buffer", JobState::pending)},
                          1000);
    CHECK(step.group.state == JobState::pending);
    CHECK(step.stop.empty());
    step = next_step(h, {member("trainer", JobState::running), member("rollout", JobState::pending),
                         member("replay-buffer", JobState::running)},
                     1000);
    CHECK(step.group.state == JobState::running);
    CHECK(step.group.reason == "2/3 members running");
    CHECK(step.group.started_at == 100);
}

TEST_CASE("a failing member fails the group with its exit code and stops the others") {
    const auto h = parallel_group({"trainer"});
    std::vector<JobRecord> m{member("trainer", JobState::running), member("rollout", JobState::failed, 150, 3),
                             member("replay-buffer", JobState::running)};
    auto step = next_step(h, m, 1000);
    CHECK(stopped(step) == std::vector<std::size_t>{0, 2});
    CHECK(step.stop[0].second == "stopped: member rollout FAILED");
    CHECK(step.group.state == JobState::running); // still stopping the others
    m[0].state = JobState::cancelled;
    m[0].ended_at = 160;
    m[2].state = JobState::cancelled;
    m[2].ended_at = 160;
    step = next_step(h, m, 1000);
    CHECK(step.stop.empty());
    CHECK(step.group.state == JobState::failed);
    CHECK(step.group.exit_code == 3);
    CHECK(step.group.reason == "member rollout FAILED: exit code 3");
    CHECK(step.group.ended_at == 160);
}

TEST_CASE("the first failure by end time decides the group") {
    const auto h = parallel_group();
    auto step = next_step(h, {member("trainer", JobState::failed, 200, 1), member("rollout", JobState::failed, 150, 7),
                              member("replay-buffer", JobState::cancelled, 210)},
                          1000);
    CHECK(step.group.state == JobState::failed);
    CHECK(step.group.exit_code == 7);
}

TEST_CASE("when the primaries end the others are stopped after the termination delay") {
    const auto h = parallel_group({"trainer"}, 30);
    std::vector<JobRecord> m{member("trainer", JobState::succeeded, 500, 0), member("rollout", JobState::running),
                             member("replay-buffer", JobState::running)};
    auto step = next_step(h, m, 510);
    CHECK(step.stop.empty());
    CHECK(step.next_deadline == 530);
    CHECK(step.group.state == JobState::running);
    step = next_step(h, m, 530);
    CHECK(stopped(step) == std::vector<std::size_t>{1, 2});
    CHECK(step.stop[0].second == "stopped: the primary tasks ended");
    m[1].state = m[2].state = JobState::cancelled;
    m[1].ended_at = m[2].ended_at = 531;
    step = next_step(h, m, 531);
    CHECK(step.group.state == JobState::succeeded);
    CHECK(step.group.exit_code == 0);
    CHECK(step.group.ended_at == 531);
}

TEST_CASE("a per-member termination delay applies to that member only") {
    auto h = parallel_group({"trainer"});
    h.termination_delay["rollout"] = 100;
    std::vector<JobRecord> m{member("trainer", JobState::succeeded, 500, 0), member("rollout", JobState::running),
                             member("replay-buffer", JobState::running)};
    auto step = next_step(h, m, 500);
    CHECK(stopped(step) == std::vector<std::size_t>{2});
    CHECK(step.next_deadline == 600);
}

TEST_CASE("an auxiliary that fails while being stopped does not change the outcome") {
    const auto h = parallel_group({"trainer"});
    auto step = next_step(h, {member("trainer", JobState::succeeded, 500, 0), member("rollout", JobState::failed, 502, 143),
                              member("replay-buffer", JobState::cancelled, 502)},
                          510);
    CHECK(step.group.state == JobState::succeeded);
}

TEST_CASE("without primary_tasks every member is primary") {
    const auto h = parallel_group();
    auto step = next_step(h, {member("trainer", JobState::succeeded, 500, 0), member("rollout", JobState::running),
                              member("replay-buffer", JobState::succeeded, 400, 0)},
                          510);
    CHECK(step.stop.empty());
    CHECK(step.group.state == JobState::running);
}

TEST_CASE("a primary cancelled by hand cancels the group") {
    const auto h = parallel_group({"trainer"});
    auto step = next_step(h, {member("trainer", JobState::cancelled, 500), member("rollout", JobState::running),
                              member("replay-buffer", JobState::running)},
                          510);
    CHECK(stopped(step) == std::vector<std::size_t>{1, 2});
}

TEST_CASE("a pipeline submits each stage when the one before succeeded") {
    const auto h = pipeline(3);
    auto step = next_step(h, {member("stage1", JobState::running), member("stage2", JobState::pending, {}, {}, false),
                              member("stage3", JobState::pending, {}, {}, false)},
                          0);
    CHECK(step.submit.empty());
    CHECK(step.group.state == JobState::running);
    CHECK(step.group.reason.rfind("stage 1/3 (stage1)", 0) == 0);
    step = next_step(h, {member("stage1", JobState::succeeded, 10, 0), member("stage2", JobState::pending, {}, {}, false),
                         member("stage3", JobState::pending, {}, {}, false)},
                     0);
    CHECK(step.submit == std::vector<std::size_t>{1});
    step = next_step(h, {member("stage1", JobState::succeeded, 10, 0), member("stage2", JobState::succeeded, 20, 0),
                         member("stage3", JobState::succeeded, 30, 0)},
                     0);
    CHECK(step.group.state == JobState::succeeded);
    CHECK(step.group.exit_code == 0);
}

TEST_CASE("a stage whose submit failed in transit is not submitted again: status settles it") {
    const auto h = pipeline(2);
    auto unsure = member("stage2", JobState::pending, {}, {}, false);
    unsure.reason = std::string(k_submit_unsure_reason) + " no answer from lab to the submit";
    auto step = next_step(h, {member("stage1", JobState::succeeded, 10, 0), unsure}, 0);
    CHECK(step.submit.empty());
    CHECK(step.group.state == JobState::running);
}

TEST_CASE("a failed stage ends the pipeline with its exit code and the rest never run") {
    const auto h = pipeline(3);
    std::vector<JobRecord> m{member("stage1", JobState::succeeded, 10, 0), member("stage2", JobState::failed, 20, 3),
                             member("stage3", JobState::pending, {}, {}, false)};
    auto step = next_step(h, m, 0);
    CHECK(step.submit.empty());
    REQUIRE(stopped(step) == std::vector<std::size_t>{2});
    CHECK(step.stop[0].second == "not run: stage 2/3 (stage2) FAILED");
    m[2].state = JobState::cancelled;
    step = next_step(h, m, 0);
    CHECK(step.group.state == JobState::failed);
    CHECK(step.group.exit_code == 3);
}

TEST_CASE("the address book names every member's ranks in order") {
    const auto h = parallel_group();
    const auto book = address_book(h, {{"trainer", {"gpu1", "gpu2"}}, {"rollout", {"10.0.0.7"}},
                                       {"replay-buffer", {"cpu1"}}});
    CHECK(book == "TANDEM_GROUP_MEMBERS='trainer\nrollout\nreplay-buffer'\n"
                  "TANDEM_GROUP_TRAINER_HOSTS='gpu1\ngpu2'\n"
                  "TANDEM_GROUP_ROLLOUT_HOSTS='10.0.0.7'\n"
                  "TANDEM_GROUP_REPLAY_BUFFER_HOSTS='cpu1'\n");
    CHECK(hosts_variable("reward_model-2") == "TANDEM_GROUP_REWARD_MODEL_2_HOSTS");
}

TEST_CASE("only host names and IP addresses are addresses") {
    CHECK(valid_address("gpu-node-1.cluster.local"));
    CHECK(valid_address("10.1.2.3"));
    CHECK(valid_address("fd00::1"));
    CHECK_FALSE(valid_address(""));
    CHECK_FALSE(valid_address("a'b"));
    CHECK_FALSE(valid_address("$(reboot)"));
    CHECK_FALSE(valid_address("a b"));
    CHECK_FALSE(valid_address(std::string(300, 'a')));
}

TEST_CASE("the stored header reads back as written") {
    auto h = parallel_group({"trainer"}, 15);
    h.termination_delay["rollout"] = 5;
    auto back = group_header_from_json(to_json(h).dump());
    REQUIRE(back);
    CHECK(back->name == "rl");
    CHECK(back->kind == GroupKind::parallel);
    CHECK(back->members == h.members);
    CHECK(back->primary == h.primary);
    CHECK(back->termination_delay_of("rollout") == 5);
    CHECK(back->termination_delay_of("trainer") == 15);
    CHECK(back->channel(2) == "tandem-0badcafe-2");
    CHECK_FALSE(group_header_from_json("{\"group\": 3}"));
    CHECK_FALSE(group_header_from_json("not json"));
}

TEST_CASE("members get the group's names, and a job group its wait") {
    const auto env = group_environment(parallel_group(), 7, "rollout", 600);
    CHECK(env == std::vector<std::pair<std::string, std::string>>{{"SKYPILOT_JOBGROUP_NAME", "rl"},
                                                                  {"TANDEM_GROUP", "rl"},
                                                                  {"TANDEM_GROUP_ID", "7"},
                                                                  {"TANDEM_GROUP_MEMBER", "rollout"},
                                                                  {"TANDEM_GROUP_WAIT", "600"}});
    CHECK(group_environment(pipeline(2), 7, "stage1", 600).size() == 4);
}
