#include <catch2/catch.hpp>

#include "backends/slurm/api_version.hpp"
#include "slurm_fixtures.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {
std::vector<std::string> paths_for(std::initializer_list<const char*> versions, bool db = false) {
    std::vector<std::string> out{"/openapi/v3"};
    for (const char* v : versions) {
        for (const char* rest :
             {"/job/submit", "/job/{job_id}", "/jobs/", "/partitions/", "/nodes/", "/ping/"}) {
            out.push_back(std::string("/slurm/") + v + rest);
        }
        if (db) {
            out.push_back(std::string("/slurmdb/") + v + "/job/{job_id}");
        }
    }
    return out;
}
} // namespace

TEST_CASE("a Slurm 22.05 server (recorded) gets v0.0.38 with accounting") {
    auto choice = choose_api_version(slurm_fixture("v0.0.38", "openapi_v3_paths.json"));
    REQUIRE(choice);
    CHECK(choice->version == ApiVersion::v0_0_38);
    CHECK(choice->accounting);
    CHECK(choice->offered == std::vector<std::string>{"v0.0.38"});
    CHECK(to_string(choice->version) == "v0.0.38");
}

TEST_CASE("a Slurm 24.11 server (recorded) gets v0.0.42, without accounting, and serves each pin") {
    // GET /openapi/v3 of 24.11.5 without slurmdbd: /slurm/ paths for v0.0.40-v0.0.42 (collections with a
    // trailing slash), no /slurmdb/ path. Each fixture directory holds this same recorded answer.
    for (const char* dir : {"v0.0.40", "v0.0.41", "v0.0.42"}) {
        INFO(dir);
        const auto openapi = slurm_fixture(dir, "openapi_v3.json");
        CHECK(openapi["info"]["version"] == "Slurm-24.11.5&openapi/slurmctld");
        auto choice = choose_api_version(openapi);
        REQUIRE(choice);
        CHECK(choice->version == ApiVersion::v0_0_42);
        CHECK_FALSE(choice->accounting);
        CHECK(choice->offered == std::vector<std::string>{"v0.0.42", "v0.0.41", "v0.0.40"});
        auto pinned = choose_api_version(openapi, dir);
        REQUIRE(pinned);
        CHECK(to_string(pinned->version) == dir);
        CHECK_FALSE(pinned->accounting);
    }
    auto old = choose_api_version(slurm_fixture("v0.0.42", "openapi_v3.json"), "v0.0.38");
    REQUIRE_FALSE(old);
    CHECK(old.error().kind == ErrorKind::config);
}

TEST_CASE("the newest supported version wins") {
    // 23.11 with slurmdbd offers v0.0.38-v0.0.40.
    auto c2311 = choose_api_version(paths_for({"v0.0.40", "v0.0.39", "v0.0.38"}, true));
    REQUIRE(c2311);
    CHECK(c2311->version == ApiVersion::v0_0_40);
    CHECK(c2311->accounting);
    CHECK(c2311->offered == std::vector<std::string>{"v0.0.40", "v0.0.39", "v0.0.38"});

    // 24.05 offers v0.0.39-v0.0.41.
    auto c2405 = choose_api_version(paths_for({"v0.0.41", "v0.0.40", "v0.0.39"}));
    REQUIRE(c2405);
    CHECK(c2405->version == ApiVersion::v0_0_41);

    // 25.05 offers v0.0.41-v0.0.43: tandem takes v0.0.42, the newest it speaks.
    auto c2505 = choose_api_version(paths_for({"v0.0.43", "v0.0.42", "v0.0.41"}));
    REQUIRE(c2505);
    CHECK(c2505->version == ApiVersion::v0_0_42);
    CHECK(to_string(c2505->version) == "v0.0.42");
    CHECK_FALSE(c2505->accounting);
    CHECK(c2505->offered == std::vector<std::string>{"v0.0.43", "v0.0.42", "v0.0.41"});
}

TEST_CASE("v0.0.39 alone is not spoken: v0.0.38 is taken over it") {
    auto c = choose_api_version(paths_for({"v0.0.39", "v0.0.38"}, true));
    REQUIRE(c);
    CHECK(c->version == ApiVersion::v0_0_38);
}

TEST_CASE("a version missing a path tandem needs is skipped") {
    auto paths = paths_for({"v0.0.41", "v0.0.40"});
    std::erase(paths, std::string("/slurm/v0.0.41/job/submit"));
    auto c = choose_api_version(paths);
    REQUIRE(c);
    CHECK(c->version == ApiVersion::v0_0_40);
}

TEST_CASE("no supported version: the error lists what the server offers") {
    auto c = choose_api_version(paths_for({"v0.0.39", "v0.0.44", "v0.0.43"}));
    REQUIRE_FALSE(c);
    CHECK(c.error().kind == ErrorKind::remote);
    CHECK(c.error().message.find("offers v0.0.44, v0.0.43, v0.0.39") != std::string::npos);
    CHECK(c.error().message.find("tandem speaks v0.0.42, v0.0.41, v0.0.40, v0.0.38") != std::string::npos);
    CHECK_FALSE(c.error().hint.empty());

    auto none = choose_api_version(nlohmann::json{{"paths", nlohmann::json::object()}});
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("no /slurm/ paths") != std::string::npos);

    CHECK_FALSE(choose_api_version(nlohmann::json("nonsense")));
    CHECK_FALSE(choose_api_version(nlohmann::json{{"info", 1}}));
}

TEST_CASE("a pinned version is taken when served, even when a newer one is, and is an error when not") {
    const auto c2411 = paths_for({"v0.0.42", "v0.0.41", "v0.0.40"}, true);
    for (const char* v : {"v0.0.40", "v0.0.41", "v0.0.42"}) {
        INFO(v);
        auto c = choose_api_version(c2411, v);
        REQUIRE(c);
        CHECK(to_string(c->version) == v);
        CHECK(c->accounting);
    }
    auto missing = choose_api_version(c2411, "v0.0.38");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().kind == ErrorKind::config);
    CHECK(missing.error().message == "rest.api_version v0.0.38 is not served (slurmrestd offers v0.0.42, v0.0.41, "
                                     "v0.0.40)");
    CHECK(missing.error().hint.find("auto") != std::string::npos);

    // Served but incomplete (no submit path): not taken, although an older one would be.
    auto paths = c2411;
    std::erase(paths, std::string("/slurm/v0.0.41/job/submit"));
    CHECK_FALSE(choose_api_version(paths, "v0.0.41"));
    CHECK(is_supported_api_version("v0.0.42"));
    CHECK_FALSE(is_supported_api_version("v0.0.39"));
}
