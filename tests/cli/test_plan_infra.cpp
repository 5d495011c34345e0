// plan, check and infra on the default configuration (this machine only) and on broken configurations.

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

using namespace tandem_test;

namespace {

nlohmann::json parse_json(const RunResult& r) {
    INFO(r);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    return j;
}

std::string section_after(const std::string& text, const std::string& heading) {
    auto at = text.find(heading);
    return at == std::string::npos ? std::string() : text.substr(at + heading.size());
}

} // namespace

TEST_CASE("plan shows the choice and the candidates and the artifact", "[plan]") {
    TempHome t;
    const std::string hello = examples_dir() + "/hello.yaml";
    auto r = t.tandem({"plan", hello});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "\nChosen: local/"));
    const std::string candidates = section_after(r.out, "\nCandidates:\n");
    REQUIRE_FALSE(candidates.empty());
    const auto rows = split_lines(candidates);
    REQUIRE(rows.size() >= 2);
    CHECK(rows[0].rfind("RANK", 0) == 0);
    CHECK(contains(rows[0], "CLUSTER"));
    CHECK(contains(rows[0], "SCORE"));
    CHECK(rows[1].rfind("1 ", 0) == 0);
    CHECK(contains(rows[1], "local"));
    const std::string artifact = section_after(r.out, "\nArtifact");
    REQUIRE_FALSE(artifact.empty());
    CHECK(contains(artifact, "echo \"$GREETING\"\n"));                     // the run script, verbatim
    CHECK(contains(artifact, "echo \"setup: preparing on $(hostname)\"")); // and setup
    CHECK(contains(artifact, "GREETING=Hello from tandem"));

    // plan is a dry run: nothing recorded, nothing started.
    CHECK(t.jobs_json().empty());
    CHECK(list_files(t.state_dir() + "/jobs").empty());

    auto j = parse_json(t.tandem({"plan", "--json", hello}));
    CHECK(j["chosen"]["cluster"] == "local");
    CHECK(j["chosen"]["backend"] == "local");
    REQUIRE(j["candidates"].is_array());
    CHECK(j["candidates"].size() >= 1);
    REQUIRE(j["artifact"].is_string());
    CHECK(contains(j["artifact"].get<std::string>(), "for i in 1 2 3"));
    CHECK(j["task"]["name"] == "hello");
}

TEST_CASE("plan rejects what this machine cannot do with the reason", "[plan]") {
    TempHome t;
    SECTION("GPUs on a machine with none") {
        const auto task =
            t.write("gpu.yaml", "name: gpu\nresources:\n  accelerators: H100:8\nrun: nvidia-smi\n");
        auto r = t.tandem({"plan", task});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(contains(r.out, "Chosen: none"));
        const std::string rejected = section_after(r.out, "\nRejected:\n");
        CHECK(contains(rejected, "local"));
        CHECK(contains(rejected, "H100"));
        CHECK(contains(rejected, "GPU"));
        CHECK_FALSE(contains(r.out, "Artifact"));

        auto j = parse_json(t.tandem({"plan", "--json", task}));
        CHECK(j["chosen"].is_null());
        REQUIRE(j["rejections"].size() == 1);
        CHECK(j["rejections"][0]["cluster"] == "local");
        CHECK(contains(j["rejections"][0]["reason"].get<std::string>(), "GPU"));

        auto launch = t.tandem({"launch", task});
        INFO(launch);
        CHECK(launch.exit_code == 2);
        CHECK(contains(launch.err, "GPU"));
        CHECK(t.jobs_json().empty());
    }
    SECTION("GPUs the config declares are offered") {
        t.write_config("clusters:\n  - name: box\n    type: local\n    accelerators: H100:8\n");
        const auto task =
            t.write("gpu.yaml", "name: gpu\nresources:\n  accelerators: H100:8\nrun: nvidia-smi\n");
        auto j = parse_json(t.tandem({"plan", "--json", task}));
        CHECK(j["chosen"]["cluster"] == "box");
        CHECK(contains(j["artifact"].get<std::string>(), "TANDEM_NUM_GPUS_PER_NODE=8"));
    }
    SECTION("spot capacity") {
        const auto task = t.write("spot.yaml", "name: spot\nresources:\n  use_spot: true\nrun: echo hi\n");
        auto r = t.tandem({"plan", task});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "tandem: error: " + task + ":3:3: resources.use_spot: "));
        CHECK(contains(r.err, "not supported on local"));
    }
    SECTION("several nodes") {
        const auto task = t.write("nodes.yaml", "name: nodes\nnum_nodes: 2\nrun: echo hi\n");
        auto r = t.tandem({"plan", task});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "num_nodes"));
        CHECK(contains(r.err, "local"));
        auto launch = t.tandem({"launch", task});
        CHECK(launch.exit_code == 2);
        auto flag = t.tandem({"launch", "--num-nodes", "2", examples_dir() + "/hello.yaml"});
        INFO(flag);
        CHECK(flag.exit_code == 2);
        CHECK(contains(flag.err, "num_nodes"));
        CHECK(t.jobs_json().empty());
    }
}

TEST_CASE("check and infra show this machine", "[infra]") {
    TempHome t;
    auto check = t.tandem({"check"});
    INFO(check);
    CHECK(check.exit_code == 0);
    auto lines = split_lines(check.out);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].rfind("CLUSTER", 0) == 0);
    CHECK(lines[1].rfind("local", 0) == 0);
    CHECK(contains(lines[1], " ok "));

    auto check_json = parse_json(t.tandem({"check", "--json"}));
    REQUIRE(check_json["clusters"].size() == 1);
    CHECK(check_json["clusters"][0]["ok"] == true);

    auto infra = t.tandem({"infra"});
    INFO(infra);
    CHECK(infra.exit_code == 0);
    lines = split_lines(infra.out);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].rfind("CLUSTER", 0) == 0);
    CHECK(lines[1].rfind("local", 0) == 0);

    auto j = parse_json(t.tandem({"infra", "--json"}));
    REQUIRE(j["clusters"].size() == 1);
    const auto& c = j["clusters"][0];
    CHECK(c["cluster"] == "local");
    CHECK(c["type"] == "local");
    CHECK(c["reachable"] == true);
    REQUIRE(c["pools"].size() == 1);
    CHECK(c["pools"][0]["nodes_total"] == 1);
    CHECK(c["pools"][0]["cpus_per_node"].get<int>() >= 1);
}

TEST_CASE("configuration errors are exit 2 with the config file's position", "[config]") {
    TempHome t;
    const std::string config = t.tandem_home() + "/config.yaml";
    const auto task = t.write("quick.yaml", "name: quick\nrun: echo hi\n");
    SECTION("a misspelt cluster type") {
        t.write_config("clusters:\n  - name: mine\n    type: slurmm\n");
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"launch", task}, {"status"}, {"check"}, {"plan", task}}) {
            auto r = t.tandem(args);
            INFO(args[0] << "\n" << r);
            CHECK(r.exit_code == 2);
            CHECK(r.out.empty());
            // Line 3 is `    type: slurmm`: the value starts at column 11.
            CHECK(r.err.rfind("tandem: error: " + config + ":3:11: clusters[0].type: ", 0) == 0);
            CHECK(contains(r.err, "slurmm"));
        }
    }
    SECTION("a slurm cluster with neither rest nor ssh settings") {
        t.write_config("clusters: [{name: a, type: slurm}]\n");
        auto r = t.tandem({"launch", task});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(contains(
            r.err,
            "clusters.a.rest: a slurm cluster needs rest: (slurmrestd), ssh: (a login node), or both"));
        CHECK(contains(r.err, config + ":1:"));
        CHECK(t.jobs_json().empty());
        auto check = t.tandem({"check"});
        INFO(check);
        CHECK(check.exit_code == 2);
        // SURPRISE (reported): infra calls this configuration problem "unreachable" and exits 5, where
        // check exits 2; a cluster type this build lacks is a config error, not an outage.
        auto infra = t.tandem({"infra"});
        INFO(infra);
        CHECK(infra.exit_code == 2);
    }
    SECTION("an unknown setting of a local cluster") {
        t.write_config("clusters:\n  - name: local\n    type: local\n    gpus: 8\n");
        auto r = t.tandem({"launch", task});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, config + ":2:5: "));
        CHECK(contains(r.err, "gpus"));
        CHECK(contains(r.err, "unknown setting"));
        CHECK(t.jobs_json().empty());
        CHECK(t.tandem({"check"}).exit_code == 2);
    }
    SECTION("an unknown top-level key") {
        t.write_config("clusterz: []\n");
        auto r = t.tandem({"status"});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(r.err.rfind("tandem: error: " + config + ":1:1: clusterz: ", 0) == 0);
        CHECK(contains(r.err, "did you mean 'clusters'"));
    }
    SECTION("malformed YAML") {
        t.write_config("clusters: [\n");
        auto r = t.tandem({"check"});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(r.err.rfind("tandem: error: " + config + ":", 0) == 0);
        CHECK(contains(r.err, "invalid YAML"));
    }
    SECTION("an empty config file means the default") {
        t.write_config("");
        auto r = t.tandem({"launch", task});
        INFO(r);
        CHECK(r.exit_code == 0);
        CHECK(r.out == "hi\n");
    }
}

TEST_CASE("where state goes without TANDEM_HOME", "[config]") {
    TempHome t;
    SECTION("under HOME, XDG style") {
        auto r = t.tandem({"status"}, with_env({{"TANDEM_HOME", std::nullopt}}));
        INFO(r);
        CHECK(r.exit_code == 0);
        CHECK(file_exists(t.home() + "/.local/state/tandem/jobs.db"));
        CHECK_FALSE(file_exists(t.state_dir() + "/jobs.db"));
    }
    SECTION("XDG_STATE_HOME wins over HOME") {
        const std::string xdg = t.path("xdg-state");
        auto r = t.tandem({"status"}, with_env({{"TANDEM_HOME", std::nullopt}, {"XDG_STATE_HOME", xdg}}));
        INFO(r);
        CHECK(r.exit_code == 0);
        CHECK(file_exists(xdg + "/tandem/jobs.db"));
    }
    SECTION("nowhere: no HOME at all") {
        auto r = t.tandem({"status"}, with_env({{"TANDEM_HOME", std::nullopt}, {"HOME", std::nullopt}}));
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(r.err.rfind("tandem: error: ", 0) == 0);
        CHECK(contains(r.err, "HOME"));
    }
}
