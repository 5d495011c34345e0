// Pipelines and job groups as SkyPilot writes them (several YAML documents), loaded into a TaskGroup.

#include <catch2/catch.hpp>

#include "core/task_group.hpp"
#include "sys/files.hpp"

using namespace tandem;

namespace {

TaskFileLoad load(const std::string& yaml, const SpecOverrides& overrides = {}) {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    options.base_dir = "/tmp";
    options.getenv = [](const std::string&) { return std::nullopt; };
    return load_task_text(yaml, "rl.yaml", overrides, options);
}

TaskGroup group_ok(const std::string& yaml, const SpecOverrides& overrides = {}) {
    auto r = load(yaml, overrides);
    INFO(format_diagnostics(r.diagnostics));
    REQUIRE(r.group);
    return *r.group;
}

std::string errors(const std::string& yaml) {
    auto r = load(yaml);
    CHECK_FALSE(r.group);
    CHECK_FALSE(r.task);
    return format_diagnostics(r.diagnostics);
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("group: one document is a plain task") {
    auto r = load("name: one\nrun: echo\n");
    REQUIRE(r.task);
    CHECK_FALSE(r.group);
    CHECK(r.task->name == "one");
}

TEST_CASE("group: a job group header, its members, primary tasks and termination delays") {
    auto g = group_ok("name: rl\nexecution: parallel\nprimary_tasks: [trainer]\n"
                      "termination_delay: {default: 30s, replay-buffer: 2m}\n"
                      "---\nname: trainer\nnum_nodes: 2\nresources: {accelerators: H100:8}\nrun: train\n"
                      "---\nname: replay-buffer\nrun: serve\n"
                      "---\nname: rollout\nresources: {accelerators: A100:0.5}\nrun: roll\n");
    CHECK(g.name == "rl");
    CHECK(g.kind == GroupKind::parallel);
    REQUIRE(g.members.size() == 3);
    CHECK(g.members[0].num_nodes == 2);
    CHECK(g.members[2].resources.accelerators[0].fractional());
    CHECK(g.is_primary("trainer"));
    CHECK_FALSE(g.is_primary("rollout"));
    CHECK(g.termination_delay_of("rollout") == 30);
    CHECK(g.termination_delay_of("replay-buffer") == 120);
    CHECK(g.members[1].location_of("name").line == 11); // positions count from the top of the file
}

TEST_CASE("group: without primary_tasks every member is primary, and a bare delay is everyone's") {
    auto g = group_ok("name: g\nexecution: parallel\ntermination_delay: 10\n---\nname: a\nrun: x\n---\n"
                      "name: b\nrun: y\n");
    CHECK(g.is_primary("a"));
    CHECK(g.is_primary("b"));
    CHECK(g.termination_delay_of("b") == 10);
}

TEST_CASE("group: a pipeline, with and without a header, unnamed stages named after it") {
    auto headed = group_ok("name: train-eval\n---\nname: train\nrun: a\n---\nrun: b\n");
    CHECK(headed.kind == GroupKind::pipeline);
    CHECK(headed.name == "train-eval");
    REQUIRE(headed.members.size() == 2);
    CHECK(headed.members[1].name == "train-eval-2");
    auto serial = group_ok("name: p\nexecution: serial\n---\nrun: a\n---\nrun: b\n");
    CHECK(serial.kind == GroupKind::pipeline);
    auto bare = group_ok("name: first\nrun: a\n---\nname: second\nrun: b\n");
    CHECK(bare.name == "rl"); // the file's name
    REQUIRE(bare.members.size() == 2);
    CHECK(bare.members[0].name == "first");
}

TEST_CASE("group: overrides apply to every member, and -n names the group") {
    SpecOverrides o;
    o.envs = {"LR=3e-4"};
    o.name = "sweep-1";
    auto g = group_ok("name: g\nexecution: parallel\n---\nname: a\nrun: x\n---\nname: b\nrun: y\n", o);
    CHECK(g.name == "sweep-1");
    CHECK(g.members[0].name == "a");
    CHECK(g.members[1].envs == std::vector<std::pair<std::string, std::string>>{{"LR", "3e-4"}});
}

TEST_CASE("group: every problem of every document at once, with positions") {
    auto text =
        errors("name: g\nexecution: parallel\nprimary_tasks: [nope]\n---\nrun: x\n---\nname: 'b c'\nrun: y\n"
               "---\nname: d\nresources: {cpus: -1}\nrun: z\n");
    CHECK(has(text, "rl.yaml:5:1: name: every task of a job group needs a name"));
    CHECK(has(text, "rl.yaml:7:1: name: a task of a pipeline or job group is named with letters"));
    CHECK(has(text, "rl.yaml:11:19: resources.cpus: CPU count must be positive"));
    CHECK(has(text, "rl.yaml:3:16: primary_tasks: 'nope' is not a task of the group"));
    CHECK(has(errors("name: g\nexecution: parallel\n---\nname: a\nrun: x\n---\nname: a\nrun: y\n"),
              "'a' names two tasks of the group"));
    CHECK(has(errors("name: g\nexecution: sideways\nprimary_tasks: [a]\n---\nname: a\nrun: x\n---\nrun: y\n"),
              "'sideways' is neither parallel"));
    CHECK(
        has(errors("name: p\nprimary_tasks: [a]\n---\nname: a\nrun: x\n---\nname: b\nrun: y\n"),
            "rl.yaml:2:16: primary_tasks: applies to a job group (execution: parallel), not to a pipeline"));
    CHECK(has(
        errors("name: g\nexecution: parallel\ntermination_delay: soon\n---\nname: a\nrun: x\n---\nname: b\n"
               "run: y\n"),
        "termination_delay:"));
    CHECK(has(errors("name: p\n---\n---\nrun: y\n"), "document 2 of the file is empty"));
}

TEST_CASE("group: a header key SkyPilot warns about is noted, not refused") {
    auto g =
        group_ok("name: g\nexecution: parallel\nowner: me\n---\nname: a\nrun: x\n---\nname: b\nrun: y\n");
    REQUIRE(g.notes.size() == 1);
    CHECK(g.notes[0].field == "owner");
}
