// One config with the real Slurm testbed (`lab`, over slurmrestd), the real Kubernetes testbed (`k8s`)
// and the local machine: the planner's choices with live inventories, failover on a refusal and on a
// pending timeout, and the merged status while one backend is down. These tests fill Slurm's GPU
// nodes, change its partitions and stop slurmrestd, so they run alone (RUN_SERIAL).

#include <thread>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"
#include "slurm_testbed.hpp"

using namespace tandem_test;
using nlohmann::json;

namespace {

// A home whose config has the three clusters, plus `extra` top-level config (planner, ...).
struct MultiHome {
    TempHome home;
    RunOptions options;

    explicit MultiHome(const std::string& extra = "", const std::string& k8s_namespace = "") {
        const auto& slurm = slurm_env();
        home.write_config("clusters:\n"
                          "  - name: lab\n"
                          "    type: slurm\n"
                          "    discover_jobs: false\n"
                          "    rest:\n"
                          "      url: " +
                          slurm.at("SLURM_REST_URL") +
                          "\n"
                          "      user: " +
                          slurm.at("SLURM_JWT_USER") +
                          "\n"
                          "      token_env: SLURM_JWT\n" +
                          rest_api_pin_line() + default_partition_line() +
                          "    home: " + slurm.at("SLURM_USER_HOME") +
                          "\n"
                          "  - name: k8s\n"
                          "    type: kubernetes\n"
                          "    discover_jobs: false\n"
                          "    kubeconfig: " +
                          k8s_setting("K8S_KUBECONFIG") +
                          "\n"
                          "    namespace: " +
                          (k8s_namespace.empty() ? k8s_setting("K8S_NAMESPACE") : k8s_namespace) +
                          "\n"
                          "  - name: local\n"
                          "    type: local\n" +
                          extra);
        options.env = home.base_env();
        options.env["SLURM_JWT"] = slurm.at("SLURM_JWT");
    }
    // Nothing is left running, whatever the test did.
    ~MultiHome() {
        RunOptions o = options;
        o.timeout = 60s;
        (void)home.tandem({"cancel", "--all"}, o);
    }
    MultiHome(const MultiHome&) = delete;
    MultiHome& operator=(const MultiHome&) = delete;

    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const {
        RunOptions o = options;
        o.timeout = timeout;
        return home.tandem(args, o);
    }
    std::string task(const std::string& name, const std::string& yaml) const {
        return home.write(name + ".yaml", yaml);
    }
    json plan(const std::string& file) const {
        auto r = tandem({"plan", file, "--json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out);
    }
    json job(int id) const {
        auto r = tandem({"status", std::to_string(id), "--json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        auto j = json::parse(r.out);
        REQUIRE(j["jobs"].size() == 1);
        return j["jobs"][0];
    }
    int launch_detached(const std::string& file) const {
        auto r = tandem({"launch", "-d", file});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return std::stoi(r.out);
    }
    json wait_state(int id, const std::string& state, std::chrono::milliseconds limit = 90s) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        json j;
        while (std::chrono::steady_clock::now() < deadline) {
            j = job(id);
            const auto now = j["state"].get<std::string>();
            if (now == state || is_terminal_state(now)) {
                return j;
            }
            std::this_thread::sleep_for(300ms);
        }
        return j;
    }
};

std::string chosen(const json& plan) {
    const auto& c = plan["chosen"];
    return c.is_object() ? c["cluster"].get<std::string>() + "/" + c["pool"].get<std::string>() : "none";
}

// The rejection reason of `cluster`/`pool` in a plan ("" when that pool is not rejected); pool "" is
// the whole cluster (a field its backend does not support).
std::string rejection(const json& plan, const std::string& cluster, const std::string& pool) {
    for (const auto& r : plan["rejections"]) {
        if (r.value("cluster", "") == cluster && r.value("pool", "") == pool) {
            return r.value("reason", "");
        }
    }
    return "";
}

// Runs a command as root (the tests run as root: scontrol, kubectl as admin); fails the test if it fails.
RunResult must(const std::vector<std::string>& argv) {
    auto r = run(argv, RunOptions{{}, "", 60s, "", {}});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return r;
}

// The same for a Slurm client command on the testbed (slurm_command).
RunResult must_slurm(const std::vector<std::string>& argv) {
    auto r = slurm_command(argv, 60s);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return r;
}

// The Slurm job's state as slurmctld reports it ("CANCELLED", ...), or "" once it has left slurmctld.
std::string slurm_state(const std::string& slurm_id) {
    auto r = slurm_command({"scontrol", "show", "job", slurm_id, "--oneliner"});
    const auto at = r.out.find("JobState=");
    return at == std::string::npos ? "" : r.out.substr(at + 9, r.out.find(' ', at) - at - 9);
}

const std::string k_h100 = "H100:1";

} // namespace

TEST_CASE("the planner sends each task where only it can run, and the preference decides the rest") {
    MultiHome lab;

    SECTION("2 nodes of 8 H100: only Slurm has two such nodes") {
        const auto plan = lab.plan(lab.task("multi", "name: multi\nnum_nodes: 2\n"
                                                     "resources: {accelerators: H100:8}\nrun: hostname\n"));
        CHECK(chosen(plan) == "lab/gpu");
        CHECK(plan["candidates"].size() == 1);
        CHECK(rejection(plan, "k8s", k8s_setting("K8S_GPU_PRODUCT")) ==
              "needs 16 GPUs for 2 pods, pool has 8");
        CHECK(rejection(plan, "local", "") == "not supported on local: local runs one node");
    }
    SECTION("a MIG slice of an A100: only Kubernetes shares GPUs") {
        const auto plan =
            lab.plan(lab.task("mig", "name: mig\nresources: {accelerators: A100-80GB:0.1}\nrun: true\n"));
        CHECK(chosen(plan) == "k8s/NVIDIA-A100-SXM4-80GB");
        CHECK(plan["chosen"]["starts_now"] == true); // the node agent's 7 slices are free
        CHECK_THAT(rejection(plan, "lab", ""),
                   Catch::StartsWith("not supported on slurm: fractional GPUs need MIG or time-sliced GPUs"));
        // Half a GPU is more than the 1g.10gb slices the node has: no placement, and the reason says so.
        auto half = lab.tandem(
            {"launch", "-d",
             lab.task("half", "name: half\nresources: {accelerators: A100-80GB:0.5}\nrun: true\n")});
        CHECK(half.exit_code == 2);
        CHECK(contains(half.err, "needs 0.5 of a GPU, largest MIG slice here is 1g.10gb"));
    }
    SECTION("one H100: both can, Slurm by default, Kubernetes when the config prefers it") {
        const auto file =
            lab.task("either", "name: either\nresources: {accelerators: " + k_h100 + "}\nrun: true\n");
        const auto by_default = lab.plan(file);
        CHECK(chosen(by_default) == "lab/gpu");
        REQUIRE(by_default["candidates"].size() == 2);
        CHECK(by_default["candidates"][1]["cluster"] == "k8s");
        CHECK(by_default["chosen"]["breakdown"]["backend_preference"] >
              by_default["candidates"][1]["breakdown"]["backend_preference"]);

        MultiHome k8s_first("planner:\n  prefer: [kubernetes, slurm]\n");
        const auto preferred = k8s_first.plan(
            k8s_first.task("either", "name: either\nresources: {accelerators: " + k_h100 + "}\nrun: true\n"));
        CHECK(chosen(preferred) == "k8s/" + k8s_setting("K8S_GPU_PRODUCT"));
        CHECK(preferred["candidates"][1]["cluster"] == "lab");
    }
    SECTION("a GPU nobody has: launch prints every rejection and exits 2") {
        auto r = lab.tandem(
            {"launch", "-d", lab.task("none", "name: none\nresources: {accelerators: B200:1}\nrun: true\n")});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        for (const char* line :
             {"lab/gpu", "lab/cpu", "local/local", "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"}) {
            CHECK(contains(r.err, line));
        }
        CHECK(contains(r.err, "needs B200, pool has h100"));
        CHECK(contains(r.err, "needs B200, pool has H100"));
        CHECK(lab.tandem({"status", "--all", "--json"}).out.find("\"none\"") == std::string::npos);
    }
}

TEST_CASE("a partition that refuses the job passes it to the next candidate, and status keeps the history") {
    // 22.05: a partition the test user's group may not use: slurmctld refuses the submit (error 2003).
    // Created open, then closed: 22.05 refuses AllowGroups on create ("Invalid user id"). A run cut short may
    // have left it behind.
    // 24.11 hides a partition the user's groups may not use (from REST's partition list too), so there
    // the refusal comes from MinNodes above the partition's node count, which tandem does not check and
    // slurmctld refuses at submit (EnforcePartLimits=ALL).
    (void)slurm_command({"scontrol", "delete", "PartitionName=locked"});
    must_slurm(
        {"scontrol", "create", "PartitionName=locked", "Nodes=gpu1,gpu2", "MaxTime=1-00:00:00", "State=UP"});
    struct Drop {
        ~Drop() { (void)slurm_command({"scontrol", "delete", "PartitionName=locked"}); }
    } drop;
    const std::string refusal =
        testbed_is_24() ? "Node count specification invalid: Batch job submission failed (error 2006)"
                        : "User's group not permitted to use this partition (error 2003)";
    must_slurm(
        {"scontrol", "update", "PartitionName=locked", testbed_is_24() ? "MinNodes=3" : "AllowGroups=root"});

    MultiHome lab;
    const auto file = lab.task("refused", "name: refused\nresources:\n  ordered:\n"
                                          "    - {infra: slurm/lab/locked, accelerators: " +
                                              k_h100 + "}\n    - {infra: k8s, accelerators: " + k_h100 +
                                              "}\nrun: echo ran-after-refusal\n");
    auto r = lab.tandem({"launch", "--wait", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "lab/locked declined job 1: cluster lab: slurm: " + refusal + "; trying k8s/"));
    const auto job = lab.job(1);
    CHECK(job["state"] == "SUCCEEDED");
    CHECK(job["cluster"] == "k8s");
    REQUIRE(job["attempts"].size() == 1);
    const auto& first = job["attempts"][0];
    CHECK(first["cluster"] == "lab");
    CHECK(first["pool"] == "locked");
    CHECK(first["remote_id"] == ""); // refused: no Slurm job was ever made
    CHECK_THAT(first["outcome"].get<std::string>(), Catch::StartsWith("refused: "));
    auto table = lab.tandem({"status", "1"});
    CHECK(contains(table.out, "Job 1 moved 1 time(s):"));
    CHECK(contains(lab.tandem({"logs", "1"}).out, "ran-after-refusal"));
}

TEST_CASE("a quota that refuses the GPUs on Kubernetes passes the job to Slurm") {
    const std::string ns = "tandem-quota";
    const auto kubeconfig = k8s_setting("K8S_KUBECONFIG");
    (void)run({"/usr/bin/kubectl", "--kubeconfig", kubeconfig, "create", "namespace", ns},
              RunOptions{{}, "", 30s, "", {}});
    struct Drop {
        std::string kubeconfig, ns;
        ~Drop() {
            (void)run(
                {"/usr/bin/kubectl", "--kubeconfig", kubeconfig, "delete", "namespace", ns, "--wait=false"},
                RunOptions{{}, "", 30s, "", {}});
        }
    } drop{kubeconfig, ns};
    (void)run({"/usr/bin/kubectl", "--kubeconfig", kubeconfig, "-n", ns, "delete", "resourcequota", "gpus"},
              RunOptions{{}, "", 30s, "", {}});
    must({"/usr/bin/kubectl", "--kubeconfig", kubeconfig, "-n", ns, "create", "quota", "gpus",
          "--hard=requests.nvidia.com/gpu=1"});

    MultiHome lab("", ns);
    const auto file = lab.task("quota", "name: quota\nresources:\n  ordered:\n"
                                        "    - {infra: k8s, accelerators: H100:2}\n"
                                        "    - {infra: slurm/lab/gpu, accelerators: H100:2}\n"
                                        "run: echo ran-after-quota\n");
    auto r = lab.tandem({"launch", "--wait", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "exceeded quota"));
    CHECK(contains(r.err, "; trying lab/gpu"));
    const auto job = lab.job(1);
    CHECK(job["cluster"] == "lab");
    CHECK(job["state"] == "SUCCEEDED");
    REQUIRE(job["attempts"].size() == 1);
    CHECK(job["attempts"][0]["cluster"] == "k8s");
    // Nothing of the declined submit is left in the namespace (the Secret and Service go with it).
    auto left = run({"/usr/bin/kubectl", "--kubeconfig", kubeconfig, "-n", ns, "get", "jobs,services,secrets",
                     "-l", "app.kubernetes.io/managed-by=tandem", "-o", "name"},
                    RunOptions{{}, "", 30s, "", {}});
    CHECK(left.out.empty());
}

TEST_CASE("a job pending past its timeout on Slurm is cancelled there and runs on Kubernetes") {
    MultiHome lab;
    // Every GPU of both Slurm GPU nodes, so the next GPU job waits (reason Resources).
    const int blocker = lab.launch_detached(lab.task(
        "blocker", "name: blocker\nnum_nodes: 2\nresources: {infra: slurm/lab/gpu, accelerators: H100:8}\n"
                   "run: sleep 300\n"));
    REQUIRE(lab.wait_state(blocker, "RUNNING", 60s)["state"] == "RUNNING");

    const auto file = lab.task("pend", "name: pend\nresources:\n  ordered:\n"
                                       "    - {infra: slurm/lab/gpu, accelerators: " +
                                           k_h100 + "}\n    - {infra: k8s, accelerators: " + k_h100 +
                                           "}\nrun: echo moved-and-ran; exit 3\n");
    auto r = lab.tandem({"launch", "--wait", "--pending-timeout", "5s", file}, 180s);
    INFO(r);
    CHECK(r.exit_code == 3); // --wait returns the job's own exit code, wherever it ran
    CHECK(contains(r.err, "cancelled there; trying k8s/"));
    const int id = blocker + 1;
    const auto job = lab.job(id);
    CHECK(job["cluster"] == "k8s");
    CHECK(job["state"] == "FAILED");
    CHECK(job["exit_code"] == 3);
    REQUIRE(job["attempts"].size() == 1);
    const auto& first = job["attempts"][0];
    CHECK(first["cluster"] == "lab");
    CHECK_THAT(first["outcome"].get<std::string>(), Catch::StartsWith("pending "));
    CHECK(contains(first["outcome"].get<std::string>(),
                   "): cancelled")); // (Resources), or (queued) before a scheduler pass
    // The Slurm copy is gone: never two live copies of one job.
    const auto slurm_id = first["remote_id"].get<std::string>();
    REQUIRE_FALSE(slurm_id.empty());
    const auto state = slurm_state(slurm_id);
    CHECK((state == "CANCELLED" || state.empty()));

    // SkyPilot's config.slurm.provision_timeout is the pending timeout on Slurm (-1 on Kubernetes: wait).
    const auto sky =
        lab.task("sky", "name: sky\nresources:\n  ordered:\n"
                        "    - {infra: slurm/lab/gpu, accelerators: " +
                            k_h100 + "}\n    - {infra: k8s, accelerators: " + k_h100 +
                            "}\nconfig:\n  slurm: {provision_timeout: 4}\n"
                            "  kubernetes: {provision_timeout: -1}\nrun: echo moved-by-provision\n");
    auto moved = lab.tandem({"launch", "--wait", sky}, 180s);
    INFO(moved);
    CHECK(moved.exit_code == 0);
    CHECK(contains(moved.err, "cancelled there; trying k8s/"));
    CHECK(lab.job(id + 1)["cluster"] == "k8s");

    // The same timeout from the task's own config, with nowhere to go: it keeps waiting on Slurm.
    const auto stay =
        lab.task("stay", "name: stay\nresources: {infra: slurm/lab/gpu, accelerators: " + k_h100 +
                             "}\nconfig: {pending_timeout: 2s}\nrun: true\n");
    auto detached = lab.tandem({"launch", "-d", stay});
    CHECK(detached.exit_code == 0);
    CHECK(contains(detached.err, "with --detach nothing moves the job"));
    CHECK(lab.tandem({"cancel", std::to_string(blocker)}).exit_code == 0);
}

TEST_CASE("status shows jobs on all three backends, and keeps going while slurmrestd is down") {
    MultiHome lab;
    const int on_local =
        lab.launch_detached(lab.task("l", "name: on-local\nresources: {infra: local}\nrun: sleep 120\n"));
    const int on_slurm = lab.launch_detached(lab.task(
        "s", "name: on-slurm\nresources: {infra: slurm/lab/gpu, accelerators: H100:1}\nrun: sleep 120\n"));
    const int on_k8s =
        lab.launch_detached(lab.task("k", "name: on-k8s\nresources: {infra: k8s}\nrun: sleep 120\n"));
    for (int id : {on_local, on_slurm, on_k8s}) {
        REQUIRE(lab.wait_state(id, "RUNNING", 60s)["state"] == "RUNNING");
    }
    auto all = lab.tandem({"status", "--json"});
    REQUIRE(all.exit_code == 0);
    auto jobs = json::parse(all.out)["jobs"];
    REQUIRE(jobs.size() == 3);
    CHECK(jobs[0]["id"] == on_local); // sorted by id
    CHECK(jobs[0]["cluster"] == "local");
    CHECK(jobs[1]["cluster"] == "lab");
    CHECK(jobs[2]["cluster"] == "k8s");

    RunResult table, as_json;
    testbed({"stop-rest"});
    {
        struct Restart {
            ~Restart() { (void)run({testbed_script(), "start-rest"}, RunOptions{{}, "", 120s, "", {}}); }
        } restart;
        table = lab.tandem({"status"}, 60s);
        as_json = lab.tandem({"status", "--json"}, 60s);
    }
    INFO(table);
    CHECK(table.exit_code == 0);
    CHECK(table.elapsed < 20s);
    CHECK(contains(table.out, "UNKNOWN (was RUNNING"));
    const auto down = json::parse(as_json.out)["jobs"];
    REQUIRE(down.size() == 3);
    CHECK(down[0]["state"] == "RUNNING");
    CHECK(down[1]["state"] == "UNKNOWN");
    CHECK(down[1]["last_known_state"] == "RUNNING");
    CHECK(contains(down[1]["reason"].get<std::string>(), "lab"));
    CHECK(down[2]["state"] == "RUNNING");

    // Back up: seen running again, and everything cancels.
    CHECK(lab.wait_state(on_slurm, "RUNNING", 60s)["state"] == "RUNNING");
    auto cancel = lab.tandem({"cancel", "--all"});
    CHECK(cancel.exit_code == 0);
    for (int id : {on_local, on_slurm, on_k8s}) {
        CHECK(lab.wait_state(id, "CANCELLED", 60s)["state"] == "CANCELLED");
    }
}
