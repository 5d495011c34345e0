#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/backend_traits.hpp"
#include "core/config.hpp"
#include "core/json_skim.hpp"
#include "core/planner.hpp"
#include "core/yaml_load.hpp"

using namespace tandem;

TEST_CASE("backend rows: one per kind, in BackendKind's order, names and aliases round-trip") {
    const auto rows = all_backend_traits();
    REQUIRE(rows.size() == k_backend_kinds);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(static_cast<std::size_t>(rows[i].kind) == i);
        CHECK(backend_kind_from_string(rows[i].name) == rows[i].kind);
        CHECK(to_string(rows[i].kind) == rows[i].name);
        CHECK(backend_kind_from_string(rows[i].config_type) == rows[i].kind);
    }
    CHECK(backend_kind_from_string("kubernetes") == BackendKind::kubernetes);
    CHECK(backend_kind_from_string("k8s") == BackendKind::kubernetes);
    CHECK_FALSE(backend_kind_from_string("pbs"));
    CHECK(backend_type_list() == "local, slurm or kubernetes");
}

TEST_CASE("backend rows: each column lists its conditions once, in the order errors are reported") {
    for (const auto& row : all_backend_traits()) {
        INFO(row.name);
        for (std::size_t i = 1; i < row.fields.size(); ++i) {
            CHECK(static_cast<int>(row.fields[i - 1].when) < static_cast<int>(row.fields[i].when));
        }
        for (const auto& cell : row.fields) {
            CHECK(cell.why_not.empty() != cell.ignored.empty()); // refused or ignored, never both
        }
    }
}

TEST_CASE("backend rows: the planner's default preferences are the documented ones") {
    using K = BackendKind;
    CHECK(default_preference(Workload::multi_node) == std::vector<K>{K::slurm, K::kubernetes, K::local});
    CHECK(default_preference(Workload::shared_gpu) == std::vector<K>{K::kubernetes, K::slurm, K::local});
    CHECK(default_preference(Workload::other) == std::vector<K>{K::slurm, K::kubernetes, K::local});
    const PlannerPolicy policy;
    CHECK(policy.prefer_shared == default_preference(Workload::shared_gpu));
}

TEST_CASE("backend rows: an infra pin names a found cluster with or without its kind's prefix") {
    ClusterInventory k8s;
    k8s.name = "k8s/prod";
    k8s.kind = BackendKind::kubernetes;
    CHECK(cluster_matches(k8s, "prod"));
    CHECK(cluster_matches(k8s, "k8s/prod"));
    CHECK_FALSE(cluster_matches(k8s, "dev"));
    ClusterInventory slurm;
    slurm.name = "k8s/prod"; // a Slurm cluster has no prefix to leave out
    slurm.kind = BackendKind::slurm;
    CHECK_FALSE(cluster_matches(slurm, "prod"));
    CHECK(cluster_matches(slurm, "k8s/prod"));
}

TEST_CASE("backend rows: provision timeouts come from each kind's own settings") {
    TaskSpec spec;
    spec.slurm.provision_timeout_seconds = 60;
    spec.kubernetes.provision_timeout_seconds = -1;
    CHECK(traits_of(BackendKind::slurm).provision_timeout(spec) == 60);
    CHECK(traits_of(BackendKind::kubernetes).provision_timeout(spec) == -1);
    CHECK(traits_of(BackendKind::local).provision_timeout == nullptr);
}

TEST_CASE("config files load with the task file's YAML guards") {
    auto bad = parse_config("clusters: [\n  {name: a, type: slurm\n", "/etc/tandem.yaml");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::StartsWith("/etc/tandem.yaml:"));
    CHECK_THAT(bad.error().message, Catch::Contains("invalid YAML"));
    // yaml-cpp's LoadAll never finishes a lone ',' where a document starts; the guard refuses it.
    auto stuck = load_yaml_document("a: 1\n---\n,\n", "k.yaml");
    REQUIRE_FALSE(stuck);
    CHECK_THAT(stuck.error().message, Catch::StartsWith("k.yaml:"));
    auto empty = load_yaml_document("", "k.yaml");
    REQUIRE(empty);
    CHECK(empty->IsNull());
    auto typed = parse_config("clusters:\n  - {name: a, type: pbs}\n", "c.yaml");
    REQUIRE_FALSE(typed);
    CHECK_THAT(typed.error().message, Catch::Contains("'pbs' is not a cluster type (use local, slurm or kubernetes)"));
}

namespace {

bool starts_with_x(std::string_view key) {
    return key.rfind("x", 0) == 0;
}

} // namespace

TEST_CASE("json skimmer: listed members take their shape, keep_whole keeps others whole, the rest is skipped") {
    const json_skim::Shape inner{{}, starts_with_x};
    const json_skim::Member members[] = {{"in", &inner}, {"whole", nullptr}};
    const json_skim::Shape top{members, nullptr};
    json_skim::Scanner scan(R"({"in": {"xa": [1, {"b": 2}], "ya": 3}, "whole": {"q": "\u00e9"}, "skip": [}}]})");
    // "skip" is not valid JSON, but only its strings and brackets are followed: '}' there does not match.
    nlohmann::json out;
    CHECK_FALSE(scan.value(out, &top, 0));
    CHECK_THAT(scan.error_text(), Catch::Contains("unexpected '}'"));

    json_skim::Scanner ok(R"({"in": {"xa": [1, {"b": 2}], "ya": 3}, "whole": {"q": "\u00e9"}, "skip": [{"]": 1}]})");
    REQUIRE(ok.value(out, &top, 0));
    CHECK(ok.at_end());
    CHECK(out == nlohmann::json::parse(R"({"in": {"xa": [1, {"b": 2}]}, "whole": {"q": "é"}})"));

    std::string deep(json_skim::k_max_depth + 2, '[');
    deep += std::string(json_skim::k_max_depth + 2, ']');
    json_skim::Scanner nested(deep);
    CHECK_FALSE(nested.value(out, nullptr, 0));
    CHECK_THAT(nested.error_text(), Catch::Contains("nested too deeply"));
}
