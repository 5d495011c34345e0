// A task's `sweep:` and `sweep_parallel:`, launch's --sweep/--num-jobs/--sweep-parallel (issue 33), and
// the elements' states as a refresh reports them and the store keeps them.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/backend_support.hpp"
#include "core/spec_loader.hpp"
#include "core/task_group.hpp"
#include "sys/files.hpp"

using namespace tandem;

namespace {

SpecLoad load(const std::string& yaml, const SpecOverrides& overrides = {}) {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    options.base_dir = "/tmp";
    options.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    return load_spec(yaml, "task.yaml", overrides, options);
}

TaskSpec load_ok(const std::string& yaml, const SpecOverrides& overrides = {}) {
    auto r = load(yaml, overrides);
    INFO(format_diagnostics(r.diagnostics));
    REQUIRE(r.spec);
    return *r.spec;
}

std::string errors_of(const std::string& yaml, const SpecOverrides& overrides = {}) {
    auto r = load(yaml, overrides);
    CHECK_FALSE(r.spec);
    return format_diagnostics(r.diagnostics);
}

} // namespace

TEST_CASE("sweep spec: a mapping of lists is a grid, sweep_parallel limits it, the stored spec keeps it") {
    auto spec =
        load_ok("run: echo $lr $bs\nsweep:\n  lr: [0.10, 0.01, 1e-3]\n  bs: [16, 32]\nsweep_parallel: 2\n");
    REQUIRE(spec.sweep);
    CHECK(spec.sweep->size() == 6);
    CHECK(spec.sweep->parallel == 2);
    CHECK(sweep_element_label(*spec.sweep, 0) == "lr=0.10 bs=16"); // as written, not as a number
    CHECK(sweep_element_label(*spec.sweep, 5) == "lr=1e-3 bs=32");
    const auto j = to_redacted_json(spec);
    auto back = sweep_from_json(j.at("sweep"));
    REQUIRE(back);
    CHECK(back->keys == spec.sweep->keys);
    CHECK(back->elements == spec.sweep->elements);
    CHECK(back->parallel == 2);
    // One value is a list of one.
    CHECK(load_ok("run: x\nsweep:\n  seed: 7\n").sweep->size() == 1);
}

TEST_CASE("sweep spec: a list of mappings is the elements as written") {
    auto spec = load_ok("run: x\nsweep:\n  - {model: small, lr: 0.1}\n  - {lr: 0.01, model: large}\n");
    REQUIRE(spec.sweep);
    CHECK(spec.sweep->size() == 2);
    CHECK(sweep_element_label(*spec.sweep, 1) == "model=large lr=0.01");
    CHECK(spec.sweep->parallel == 0);
}

TEST_CASE("sweep spec: bad sweeps are one-line errors at the key or element") {
    CHECK_THAT(errors_of("run: x\nsweep:\n  lr: []\n"),
               Catch::Contains("task.yaml:3:3: sweep.lr: lr has no values"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  TANDEM_X: [1]\n"),
               Catch::Contains("sweep.TANDEM_X: 'TANDEM_X': names starting with TANDEM_ are tandem's own"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  2lr: [1]\n"), Catch::Contains("is not a variable name"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  lr: {a: 1}\n"),
               Catch::Contains("sweep.lr: must be a list of values"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  lr: [1, [2]]\n"),
               Catch::Contains("task.yaml:3:11: sweep.lr: must be a single value, not a list"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  lr: [1, ~]\n"),
               Catch::Contains("a sweep value must not be empty"));
    CHECK_THAT(errors_of("run: x\nsweep: 3\n"), Catch::Contains("task.yaml:2:8: sweep: must be a mapping"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  - {a: 1}\n  - {b: 2}\n"),
               Catch::Contains("task.yaml:4:5: sweep[1]: element 1: b is not set by element 0"));
    CHECK_THAT(errors_of("run: x\nsweep:\n  - {a: 1}\n  - 5\n"),
               Catch::Contains("sweep[1]: must be a mapping"));
    CHECK_THAT(errors_of("run: x\nsweep: []\n"), Catch::Contains("sweep: lists no elements"));
    CHECK_THAT(errors_of("run: x\nsweep_parallel: 2\n"),
               Catch::Contains("task.yaml:2:1: sweep_parallel: limits a sweep, and the task has none"));
    CHECK_THAT(errors_of("run: x\nsweep: {a: [1]}\nsweep_parallel: 0\n"), Catch::Contains("sweep_parallel:"));
    // 101 x 100 values: over the bound, said before the product is built.
    std::string big = "run: x\nsweep:\n  a: [";
    for (int i = 0; i < 101; ++i) {
        big += std::to_string(i) + (i < 100 ? "," : "]\n  b: [");
    }
    for (int i = 0; i < 100; ++i) {
        big += std::to_string(i) + (i < 99 ? "," : "]\n");
    }
    CHECK_THAT(errors_of(big), Catch::Contains("sweep: the grid 101 x 100 has more than 10000 elements"));
    CHECK_THAT(errors_of("run: x\nsweep: {a: [1]}\nservice: {readiness_probe: /}\n"),
               Catch::Contains("sweep: a service runs replicas of one task, not a sweep"));
}

TEST_CASE("sweep spec: --sweep replaces the file's grid, --num-jobs gives ranks, --sweep-parallel wins") {
    SpecOverrides o;
    o.sweep_axes = {"lr=0.1,0.2", "tag=a\\,b,c"};
    o.sweep_parallel = "3";
    auto spec = load_ok("run: x\nsweep: {seed: [1, 2, 3]}\nsweep_parallel: 1\n", o);
    REQUIRE(spec.sweep);
    CHECK(spec.sweep->keys == std::vector<std::string>{"lr", "tag"});
    CHECK(sweep_element_label(*spec.sweep, 0) == "lr=0.1 tag=a,b");
    CHECK(spec.sweep->parallel == 3);

    SpecOverrides n;
    n.num_jobs = "4";
    auto ranks = load_ok("run: x\nsweep_parallel: 2\n", n);
    REQUIRE(ranks.sweep);
    CHECK(ranks.sweep->size() == 4);
    CHECK(ranks.sweep->keys.empty());
    CHECK(ranks.sweep->parallel == 2);
    CHECK(sweep_element_label(*ranks.sweep, 3) == "#3");

    SpecOverrides both = o;
    both.num_jobs = "2";
    CHECK_THAT(errors_of("run: x\n", both),
               Catch::Contains("--num-jobs: sweep: --num-jobs and --sweep both"));
    SpecOverrides bad;
    bad.sweep_axes = {"nokey"};
    CHECK_THAT(errors_of("run: x\n", bad), Catch::Contains("--sweep: sweep: 'nokey' is not KEY=VALUE"));
    SpecOverrides zero;
    zero.num_jobs = "0";
    CHECK_THAT(errors_of("run: x\n", zero), Catch::Contains("--num-jobs"));
}

TEST_CASE("sweep spec: a task of a job group cannot be a sweep") {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    options.base_dir = "/tmp";
    auto g = load_task_text("name: g\nexecution: parallel\n---\nname: a\nrun: x\nsweep: {k: [1, 2]}\n---\n"
                            "name: b\nrun: y\n",
                            "group.yaml", {}, options);
    CHECK_FALSE(g.group);
    CHECK_THAT(format_diagnostics(g.diagnostics),
               Catch::Contains("group.yaml:6:1: sweep: a task of a pipeline or "
                               "job group cannot be a sweep"));
}

TEST_CASE("sweep spec: Slurm and Kubernetes run a sweep; multi-node elements only Slurm") {
    auto spec = load_ok("run: x\nsweep: {k: [1, 2]}\n");
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::slurm).empty());
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
    auto multi = load_ok("run: x\nsweep: {k: [1, 2]}\nnum_nodes: 2\n");
    CHECK(unsupported_fields(multi, multi.resources, BackendKind::slurm).empty());
    auto refused = unsupported_fields(multi, multi.resources, BackendKind::kubernetes);
    REQUIRE(refused.size() == 1);
    CHECK(refused.front().field == "sweep");
    CHECK_THAT(refused.front().reason, Catch::Contains("either a node rank or a sweep element"));
}

TEST_CASE("sweep elements: the compact form round-trips and the sweep's state follows its elements") {
    using S = JobState;
    std::vector<ElementState> e{{S::succeeded, 0},  {S::running, {}},  {S::failed, 3},   {S::pending, {}},
                                {S::cancelled, {}}, {S::starting, {}}, {S::unknown, {}}, {S::failed, -9}};
    const auto text = format_element_states(e);
    CHECK(text == "S0,R,F3,P,C,T,U,F-9");
    CHECK(parse_element_states(text) == e);
    CHECK(parse_element_states("") == std::vector<ElementState>{});
    for (const char* bad : {"X", "S0,", ",S", "Sx", "S1.5", "S99999999999"}) {
        INFO(bad);
        CHECK_FALSE(parse_element_states(bad));
    }
    std::string huge;
    for (int i = 0; i <= 10000; ++i) {
        huge += i ? ",P" : "P";
    }
    CHECK_FALSE(parse_element_states(huge));

    auto o = sweep_outcome({{S::succeeded, 0}, {S::succeeded, 0}, {S::running, {}}, {S::failed, 3}});
    CHECK(o.state == S::running);
    CHECK(o.reason == "4 elements: 2 SUCCEEDED, 1 FAILED, 1 RUNNING");
    o = sweep_outcome({{S::succeeded, 0}, {S::failed, 3}, {S::failed, 4}});
    CHECK(o.state == S::failed);
    CHECK(o.exit_code == 3);
    o = sweep_outcome({{S::succeeded, 0}, {S::pending, {}}});
    CHECK(o.state == S::pending);
    o = sweep_outcome({{S::succeeded, 0}, {S::succeeded, 0}});
    CHECK(o.state == S::succeeded);
    CHECK(o.exit_code == 0);
    CHECK(o.reason == "2 elements: 2 SUCCEEDED");
    CHECK(sweep_outcome({{S::succeeded, 0}, {S::cancelled, {}}}).state == S::cancelled);
    CHECK(sweep_outcome({}).state == S::unknown);

    auto grid = sweep_grid({{"lr", {"0.1", "0.2"}}, {"bs", {"8", "16", "32"}}});
    REQUIRE(grid);
    std::vector<ElementState> six(6, ElementState{S::failed, 1});
    six[0] = {S::succeeded, 0};
    CHECK(failed_elements_text(*grid, six, 2) ==
          "#1 lr=0.1 bs=16: exit code 1; #2 lr=0.1 bs=32: exit code 1; and 3 more");
    CHECK(failed_elements_text(*sweep_ranks(2), {{S::failed, {}}, {S::succeeded, 0}}) == "#0: failed");
}

TEST_CASE("sweep elements: a stored sweep that is not one is refused, bounded") {
    CHECK_FALSE(sweep_from_json(nlohmann::json::parse(R"({"keys": ["a"], "elements": [["1", "2"]]})")));
    CHECK_FALSE(sweep_from_json(nlohmann::json::parse(R"({"keys": ["a"], "elements": []})")));
    CHECK_FALSE(sweep_from_json(nlohmann::json::parse(R"({"keys": [1], "elements": [[1]]})")));
    CHECK_FALSE(sweep_from_json(nlohmann::json::parse(R"([1])")));
    auto ok = sweep_from_json(nlohmann::json::parse(R"({"keys": [], "elements": [[], []], "parallel": -4})"));
    REQUIRE(ok);
    CHECK(ok->size() == 2);
    CHECK(ok->parallel == 0);
}
