// Pipelines and job groups through the real binary on the local backend: members find each other by the
// addresses tandem publishes, a pipeline stops at its first failure with that stage's exit code, the
// primaries' end stops the others after termination_delay, cancel and --detach behave as documented, and a
// group with a member nowhere to run submits nothing. (The same across Slurm and Kubernetes:
// tests/integration/test_groups.cpp.)

#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

using namespace tandem_test;

namespace {

const nlohmann::json* member_of(const nlohmann::json& group, const std::string& name) {
    for (const auto& m : group["members"]) {
        if (m["member"] == name) {
            return &m;
        }
    }
    return nullptr;
}

std::string fmt_host(const std::string& before, const char* host, const std::string& after) {
    return before + host + after;
}

std::string out_of(const TempHome& t, const nlohmann::json& member) {
    auto r = t.tandem({"logs", std::to_string(member["id"].get<int>())});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

} // namespace

TEST_CASE("a job group's members see each other's addresses, and the primaries' end stops the rest") {
    TempHome t;
    const auto file = t.write("rl.yaml", R"YAML(name: rl
execution: parallel
primary_tasks: [trainer]
termination_delay: 2s
---
name: replay-buffer
run: |
  echo "buffer: trainer at [$TANDEM_GROUP_TRAINER_HOSTS] group $SKYPILOT_JOBGROUP_NAME member $TANDEM_GROUP_MEMBER"
  sleep 120
---
name: trainer
run: |
  echo "trainer: buffer at [$TANDEM_GROUP_REPLAY_BUFFER_HOSTS] members $(echo $TANDEM_GROUP_MEMBERS)"
  sleep 1
  echo trained
)YAML");
    auto r = t.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    char host[256] = {};
    REQUIRE(gethostname(host, sizeof host - 1) == 0);
    CHECK(contains(r.out, fmt_host("[replay-buffer/0] buffer: trainer at [", host, "] group rl member replay-buffer")));
    CHECK(contains(r.out, fmt_host("[trainer/0] trainer: buffer at [", host, "] members replay-buffer trainer")));
    CHECK(contains(r.out, "[trainer/0] trained"));
    CHECK(contains(r.err, "addresses published to its 2 members"));

    auto group = t.job_json(1);
    CHECK(group["kind"] == "group");
    CHECK(group["state"] == "SUCCEEDED");
    CHECK(group["execution"] == "parallel");
    CHECK(group["addresses_published"] == true);
    REQUIRE(group["members"].size() == 2);
    const auto* buffer = member_of(group, "replay-buffer");
    const auto* trainer = member_of(group, "trainer");
    REQUIRE(buffer);
    REQUIRE(trainer);
    CHECK((*trainer)["state"] == "SUCCEEDED");
    CHECK((*trainer)["primary"] == true);
    CHECK((*buffer)["primary"] == false);
    CHECK((*buffer)["state"] == "CANCELLED");
    CHECK((*buffer)["reason"] == "stopped: the primary tasks ended");

    // The plain table: the group's row, its members indented below it.
    auto table = t.tandem({"status"});
    INFO(table);
    REQUIRE(table.exit_code == 0);
    auto lines = split_lines(table.out);
    REQUIRE(lines.size() == 4);
    CHECK(contains(lines[1], "rl (group)"));
    CHECK(contains(lines[2], "  replay-buffer"));
    CHECK(contains(lines[3], "  trainer"));
}

TEST_CASE("a pipeline runs stage by stage and stops at the first failure with its exit code") {
    TempHome t;
    const auto file = t.write("pipe.yaml", R"YAML(name: pipe
---
name: prep
run: echo prepared > prep.out
---
name: train
run: |
  test -f prep.out && echo "train saw prep"
  exit 3
---
name: eval
run: echo "eval ran" > eval.out
)YAML");
    auto r = t.tandem({"launch", "--wait", file});
    INFO(r);
    CHECK(r.exit_code == 3);
    CHECK(contains(r.err, "stage 2/3 (train) FAILED"));
    auto group = t.job_json(1);
    CHECK(group["state"] == "FAILED");
    CHECK(group["exit_code"] == 3);
    CHECK(group["execution"] == "serial");
    const auto* eval = member_of(group, "eval");
    REQUIRE(eval);
    CHECK((*eval)["state"] == "CANCELLED");
    CHECK((*eval)["remote_id"] == "");
    CHECK((*eval)["reason"] == "not run: stage 2/3 (train) FAILED");
    CHECK_FALSE(file_exists(t.path("eval.out")));
    CHECK(contains(out_of(t, *member_of(group, "train")), "train saw prep"));
    auto code = t.tandem({"status", "1", "--exit-code"});
    CHECK(code.exit_code == 3);
}

TEST_CASE("a member that fails fails the job group and the others are stopped") {
    TempHome t;
    const auto file = t.write("g.yaml", R"YAML(name: g
execution: parallel
---
name: worker
run: sleep 120
---
name: broken
run: |
  sleep 1
  exit 7
)YAML");
    auto r = t.tandem({"launch", "--wait", "--json", file});
    INFO(r);
    CHECK(r.exit_code == 7);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    CHECK(j["state"] == "FAILED");
    CHECK(j["reason"] == "member broken FAILED: exit code 7");
    CHECK((*member_of(j, "worker"))["state"] == "CANCELLED");
    CHECK((*member_of(j, "worker"))["reason"] == "stopped: member broken FAILED");
}

TEST_CASE("with --detach the addresses wait for a later status, and logs selects a member") {
    TempHome t;
    const auto file = t.write("d.yaml", R"YAML(name: d
execution: parallel
---
name: a
run: echo "a knows b at $TANDEM_GROUP_B_HOSTS"
---
name: b
run: echo "b knows a at $TANDEM_GROUP_A_HOSTS"
)YAML");
    auto r = t.tandem({"launch", "-d", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "1\n");
    CHECK(contains(r.err, "published by `tandem status 1`"));
    // Until someone looks, both wait; the first status that finds both started publishes.
    auto group = t.wait_for_terminal(1, 30s);
    CHECK(group["state"] == "SUCCEEDED");
    CHECK(group["addresses_published"] == true);
    auto logs = t.tandem({"logs", "1", "--member", "b"});
    INFO(logs);
    CHECK(logs.exit_code == 0);
    CHECK(contains(logs.out, "[b/0] b knows a at "));
    CHECK_FALSE(contains(logs.out, "[a/0]"));
    auto bad = t.tandem({"logs", "1", "--member", "c"});
    CHECK(bad.exit_code == 2);
    CHECK(contains(bad.err, "--member c: job group 1 has members a, b"));
}

TEST_CASE("a member whose addresses never come ends with a clear message") {
    TempHome t;
    const auto file = t.write("w.yaml", R"YAML(name: w
execution: parallel
---
name: lonely
envs:
  TANDEM_GROUP_WAIT: 2
run: echo never
---
name: other
run: sleep 30
)YAML");
    auto r = t.tandem({"launch", "-d", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    // Nobody runs status: nothing publishes. The member gives up after its 2 s.
    const auto log = t.job_dir(2) + "/output.log";
    std::string text;
    for (int i = 0; i < 100 && !contains(text, "did not arrive"); ++i) {
        std::this_thread::sleep_for(100ms);
        text = read_file(log).value_or("");
    }
    CHECK(contains(text, "tandem: waiting for the addresses of job group 'w'"));
    CHECK(contains(text, "did not arrive within 2s"));
    CHECK_FALSE(contains(text, "never"));
    auto group = t.wait_for_terminal(1, 20s);
    CHECK(group["state"] == "FAILED");
    CHECK((*member_of(group, "lonely"))["exit_code"] == 124);
}

TEST_CASE("cancel of a job group cancels every member") {
    TempHome t;
    const auto file = t.write("c.yaml", R"YAML(name: c
execution: parallel
---
name: one
run: sleep 120
---
name: two
run: sleep 120
)YAML");
    REQUIRE(t.tandem({"launch", "-d", file}).exit_code == 0);
    auto r = t.tandem({"cancel", "1"});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "job group 1 (c) cancelled, with its 2 members"));
    auto group = t.job_json(1);
    CHECK(group["state"] == "CANCELLED");
    for (const auto& m : group["members"]) {
        CHECK(m["state"] == "CANCELLED");
    }
}

TEST_CASE("a group with a member nowhere to run submits nothing") {
    TempHome t;
    const auto file = t.write("n.yaml", R"YAML(name: n
execution: parallel
---
name: cpu
run: echo hi
---
name: gpu
resources:
  accelerators: H100:8
run: echo hi
)YAML");
    auto r = t.tandem({"launch", file});
    INFO(r);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "no cluster can run gpu; nothing was submitted"));
    CHECK(t.jobs_json().empty());
}

TEST_CASE("a pipeline cannot be detached: nothing would submit its later stages") {
    TempHome t;
    const auto file = t.write("p.yaml", "name: p\n---\nname: a\nrun: echo a\n---\nname: b\nrun: echo b\n");
    auto r = t.tandem({"launch", "-d", file});
    INFO(r);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "--detach would leave nothing to submit them"));
    CHECK(t.jobs_json().empty());
}

TEST_CASE("logs -f of a job group publishes, follows every member and exits with the group's outcome") {
    TempHome t;
    const auto file = t.write("f.yaml", R"YAML(name: f
execution: parallel
primary_tasks: [main]
---
name: main
run: |
  echo "main sees side at $TANDEM_GROUP_SIDE_HOSTS"
  exit 5
---
name: side
run: sleep 120
)YAML");
    REQUIRE(t.tandem({"launch", "-d", file}).exit_code == 0);
    auto r = t.tandem({"logs", "1", "-f"});
    INFO(r);
    CHECK(r.exit_code == 5);
    CHECK(contains(r.out, "[main/0] main sees side at "));
    CHECK(contains(r.err, "addresses published to its 2 members"));
    CHECK(contains(r.err, "job group 1 (f) FAILED: member main FAILED: exit code 5"));
    CHECK((*member_of(t.job_json(1), "side"))["state"] == "CANCELLED");
}
