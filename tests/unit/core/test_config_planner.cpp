// The config's planner preference and pending timeout, and the task's config.pending_timeout.

#include <catch2/catch.hpp>

#include "core/config.hpp"
#include "core/quantity.hpp"
#include "core/spec_loader.hpp"
#include "sys/files.hpp"

using namespace tandem;

TEST_CASE("durations: units, combinations, and one-line errors") {
    CHECK(*parse_duration_seconds("90") == 90);
    CHECK(*parse_duration_seconds("90s") == 90);
    CHECK(*parse_duration_seconds("30m") == 1800);
    CHECK(*parse_duration_seconds("2h") == 7200);
    CHECK(*parse_duration_seconds("1h30m") == 5400);
    CHECK(*parse_duration_seconds("1d") == 86400);
    for (const char* bad : {"", "m", "10x", "1h30", "-5m", "0", "0s", "1.5h", "99999999999999h"}) {
        INFO(bad);
        auto parsed = parse_duration_seconds(bad);
        REQUIRE_FALSE(parsed);
        CHECK(parsed.error().find("is not a duration") != std::string::npos);
    }
}

TEST_CASE("planner.prefer: one list for every kind of request, or one per kind") {
    SECTION("absent: the documented default") {
        auto c = parse_config("clusters: [{name: a, type: local}]\n", "c.yaml");
        REQUIRE(c);
        CHECK(c->planner.prefer_multi_node.front() == BackendKind::slurm);
        CHECK(c->planner.prefer_shared.front() == BackendKind::kubernetes);
        CHECK_FALSE(c->pending_timeout_seconds);
    }
    SECTION("a list applies to all three, and kinds left out follow") {
        auto c = parse_config("planner:\n  prefer: [kubernetes]\npending_timeout: 10m\n", "c.yaml");
        REQUIRE(c);
        const std::vector<BackendKind> k8s_first{BackendKind::kubernetes, BackendKind::slurm,
                                                 BackendKind::local};
        CHECK(c->planner.prefer_default == k8s_first);
        CHECK(c->planner.prefer_multi_node == k8s_first);
        CHECK(c->planner.prefer_shared == k8s_first);
        CHECK(c->pending_timeout_seconds == 600);
    }
    SECTION("per kind") {
        auto c = parse_config("planner:\n  prefer:\n    shared: [slurm, k8s]\n", "c.yaml");
        REQUIRE(c);
        CHECK(c->planner.prefer_shared.front() == BackendKind::slurm);
        CHECK(c->planner.prefer_default.front() == BackendKind::slurm);
        CHECK(c->planner.prefer_multi_node.front() == BackendKind::slurm);
    }
    SECTION("errors name the file, line, column and field") {
        auto c = parse_config("planner:\n  prefer: [slurm, pbs]\n", "c.yaml");
        REQUIRE_FALSE(c);
        CHECK(c.error().message.find("c.yaml:2:") != std::string::npos);
        CHECK(c.error().message.find("planner.prefer") != std::string::npos);
        CHECK(c.error().message.find("'pbs' is not a backend") != std::string::npos);
        auto twice = parse_config("planner: {prefer: [slurm, slurm]}\n", "c.yaml");
        REQUIRE_FALSE(twice);
        CHECK(twice.error().message.find("listed twice") != std::string::npos);
        auto key = parse_config("planner: {prefer: {gang: [slurm]}}\n", "c.yaml");
        REQUIRE_FALSE(key);
        CHECK(key.error().message.find("planner.prefer.gang") != std::string::npos);
        auto timeout = parse_config("pending_timeout: soon\n", "c.yaml");
        REQUIRE_FALSE(timeout);
        CHECK(timeout.error().message.find("c.yaml:1:18: pending_timeout") != std::string::npos);
    }
}

TEST_CASE("config.pending_timeout in a task") {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    auto ok = load_spec("run: echo\nconfig:\n  pending_timeout: 5m\n", "task.yaml", {}, options);
    REQUIRE(ok.spec);
    CHECK(ok.spec->pending_timeout_seconds == 300);
    CHECK(to_redacted_json(*ok.spec)["config"]["pending_timeout"] == 300);
    auto bad = load_spec("run: echo\nconfig:\n  pending_timeout: later\n", "task.yaml", {}, options);
    REQUIRE_FALSE(bad.spec);
    REQUIRE(bad.diagnostics.size() == 1);
    CHECK(format_diagnostic(bad.diagnostics.front()).find("task.yaml:3:20") != std::string::npos);
}
