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

TEST_CASE("the newest supported version wins") {
    auto c2311 = choose_api_version(slurm_fixture("v0.0.40", "openapi_v3.json"));
    REQUIRE(c2311);
    CHECK(c2311->version == ApiVersion::v0_0_40);
    CHECK(c2311->accounting);
    CHECK(c2311->offered == std::vector<std::string>{"v0.0.40", "v0.0.39", "v0.0.38"});

    auto c2405 = choose_api_version(slurm_fixture("v0.0.41", "openapi_v3.json"));
    REQUIRE(c2405);
    CHECK(c2405->version == ApiVersion::v0_0_41);

    // 25.05 offers v0.0.41-v0.0.43: tandem still finds v0.0.41.
    auto c2505 = choose_api_version(paths_for({"v0.0.43", "v0.0.42", "v0.0.41"}));
    REQUIRE(c2505);
    CHECK(c2505->version == ApiVersion::v0_0_41);
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
    auto c = choose_api_version(paths_for({"v0.0.42", "v0.0.44", "v0.0.43"}));
    REQUIRE_FALSE(c);
    CHECK(c.error().kind == ErrorKind::remote);
    CHECK(c.error().message.find("offers v0.0.44, v0.0.43, v0.0.42") != std::string::npos);
    CHECK(c.error().message.find("v0.0.41, v0.0.40 and v0.0.38") != std::string::npos);
    CHECK_FALSE(c.error().hint.empty());

    auto none = choose_api_version(nlohmann::json{{"paths", nlohmann::json::object()}});
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("no /slurm/ paths") != std::string::npos);

    CHECK_FALSE(choose_api_version(nlohmann::json("nonsense")));
    CHECK_FALSE(choose_api_version(nlohmann::json{{"info", 1}}));
}
