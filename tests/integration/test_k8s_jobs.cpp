// The Kubernetes backend against the real control plane (scripts/testbed/k8s): real Jobs, the real
// scheduler's placement on the GPU and MIG nodes, the Job controller's states, pod logs through the API
// server. Each test uses its own job names and deletes what it made.

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"

using namespace tandem_test;

namespace {

// The node the job's pod (rank `rank`) was bound to.
std::string node_of(const std::string& base, int rank = 0) {
    for (const auto& pod : objects_of("pods", base)) {
        const auto labels = pod["metadata"].value("labels", nlohmann::json::object());
        if (labels.value("tandem.dev/rank", "0") == std::to_string(rank)) {
            return pod["spec"].value("nodeName", "");
        }
    }
    return "";
}

nlohmann::json container_limits(const std::string& base) {
    auto pods = objects_of("pods", base);
    REQUIRE(pods.size() == 1);
    return pods[0]["spec"]["containers"][0]["resources"].value("limits", nlohmann::json::object());
}

std::string sha256(const std::string& text) {
    auto r = run({"/bin/sh", "-c", "printf %s \"$V\" | sha256sum | cut -c1-64"}, with_env({{"V", text}}));
    REQUIRE(r.exit_code == 0);
    return r.out.substr(0, 64);
}

std::string base64(const std::string& text) {
    auto r = run({"/bin/sh", "-c", "printf %s \"$V\" | base64 -w0"}, with_env({{"V", text}}));
    REQUIRE(r.exit_code == 0);
    return r.out;
}

} // namespace

TEST_CASE("a CPU job runs on the cpu node, its env values (kubelet references, dollars, quotes, newlines) "
          "intact") {
    K8sHome lab;
    const auto name = unique_name("k8s-cpu");
    auto file =
        lab.task("cpu", "name: " + name +
                            "\nresources:\n  infra: k8s\n"
                            "envs:\n"
                            "  DOLLARS: '$(HOME) $$ $$$$ $HOME ${X}'\n"
                            "  QUOTES: \"it's \\\"double\\\" and 'single'\"\n"
                            "  LINES: \"first\\nsecond\\n\"\n"
                            "run: |\n"
                            "  echo \"rank=$TANDEM_NODE_RANK nodes=$TANDEM_NUM_NODES ip=$TANDEM_NODE_IPS\"\n"
                            "  printf 'dollars=[%s]\\n' \"$DOLLARS\"\n"
                            "  printf 'quotes=[%s]\\n' \"$QUOTES\"\n"
                            "  printf 'lines=[%s]\\n' \"$(printf %s \"$LINES\" | od -An -c | tr -s ' ')\"\n"
                            "  echo \"pid=$$ done\"\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    // The pod's own address on the pod network (the node agent's bridge), as status.podIP says.
    const auto pods = objects_of("pods", lab.base_of(1));
    REQUIRE(pods.size() == 1);
    const std::string pod_ip = pods[0]["status"].value("podIP", "");
    CHECK(pod_ip.rfind("10.244.0.", 0) == 0);
    CHECK(contains(r.out, "rank=0 nodes=1 ip=" + pod_ip + "\n"));
    CHECK(contains(r.out, "dollars=[$(HOME) $$ $$$$ $HOME ${X}]"));
    CHECK(contains(r.out, "quotes=[it's \"double\" and 'single']"));
    CHECK(contains(r.out, "lines=[ f i r s t \\n s e c o n d \\n]"));
    CHECK(contains(r.out, " done")); // the script's own $$ is the shell's pid, not a literal
    CHECK_FALSE(contains(r.out, "pid=$ done"));
    auto j = lab.job(1);
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["cluster"] == "lab");
    CHECK(j["exit_code"] == 0);
    const auto base = lab.base_of(1);
    CHECK(node_of(base) == "cpu-node");
    auto logs = lab.tandem({"logs", "1"});
    INFO(logs);
    CHECK(logs.exit_code == 0);
    CHECK(contains(logs.out, "quotes=[it's \"double\" and 'single']"));
    CHECK_FALSE(contains(logs.out, "[rank 0]")); // one node: no prefixes
}

TEST_CASE("a GPU job lands on the GPU node with its GPUs requested") {
    K8sHome lab;
    const auto name = unique_name("k8s-gpu");
    auto file =
        lab.task("gpu", "name: " + name +
                            "\nresources:\n  infra: k8s\n  accelerators: H100:2\n"
                            "run: echo \"gpus=$TANDEM_NUM_GPUS_PER_NODE sky=$SKYPILOT_NUM_GPUS_PER_NODE\"\n");
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    REQUIRE(plan.exit_code == 0);
    CHECK(contains(plan.out, "Chosen: lab/" + k8s_setting("K8S_GPU_PRODUCT")));
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "gpus=2 sky=2"));
    const auto base = lab.base_of(1);
    CHECK(node_of(base) == k8s_setting("K8S_GPU_NODE"));
    CHECK(container_limits(base).value("nvidia.com/gpu", "") == "2");
}

TEST_CASE("a fractional A100 job gets one MIG slice on the MIG node") {
    K8sHome lab;
    const auto name = unique_name("k8s-mig");
    auto file = lab.task("mig", "name: " + name +
                                    "\nresources:\n  infra: k8s\n  accelerators: A100-80GB:0.1\n"
                                    "run: echo mig-ran\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "mig-ran"));
    const auto base = lab.base_of(1);
    CHECK(node_of(base) == k8s_setting("K8S_MIG_NODE"));
    auto limits = container_limits(base);
    CHECK(limits.value(k8s_setting("K8S_MIG_RESOURCE"), "") == "1");
    CHECK_FALSE(limits.contains("nvidia.com/gpu"));
}

TEST_CASE("a job exiting 3 ends FAILED with exit code 3, which launch --wait returns") {
    K8sHome lab;
    auto file = lab.task("three", "name: " + unique_name("k8s-exit3") +
                                      "\nresources:\n  infra: k8s\nrun: echo before; exit 3\n");
    auto r = lab.tandem({"launch", "--wait", file});
    INFO(r);
    CHECK(r.exit_code == 3);
    CHECK_FALSE(contains(r.out, "before")); // --wait prints no output
    auto j = lab.job(1);
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 3);
    CHECK(contains(j["reason"].get<std::string>(), "exit code 3"));
    CHECK(lab.tandem({"status", "1", "--exit-code"}).exit_code == 3);
    auto logs = lab.tandem({"logs", "1"});
    CHECK(contains(logs.out, "before"));
    // And a job that succeeds: --wait exits 0.
    auto ok = lab.task("ok", "name: " + unique_name("k8s-exit0") + "\nresources:\n  infra: k8s\nrun: true\n");
    auto r0 = lab.tandem({"launch", "--wait", ok});
    INFO(r0);
    CHECK(r0.exit_code == 0);
}

TEST_CASE("a 2-node job runs both ranks, logs show rank prefixes and --node selects one") {
    K8sHome lab;
    const auto name = unique_name("k8s-two");
    auto file = lab.task("two", "name: " + name +
                                    "\nnum_nodes: 2\nresources:\n  infra: k8s\n"
                                    "setup: echo \"setup-$TANDEM_NODE_RANK\"\n"
                                    "run: |\n"
                                    "  echo \"rank=$TANDEM_NODE_RANK of $TANDEM_NUM_NODES "
                                    "sky=$SKYPILOT_NODE_RANK\"\n"
                                    "  echo \"ips=$(printf %s \"$TANDEM_NODE_IPS\" | wc -l)\"\n"
                                    "  printf 'no-newline-%s' \"$TANDEM_NODE_RANK\"\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "[rank 0] rank=0 of 2 sky=0"));
    CHECK(contains(r.out, "[rank 1] rank=1 of 2 sky=1"));
    CHECK(contains(r.out, "[rank 0] setup-0"));
    CHECK(contains(r.out, "[rank 1] setup-1"));
    CHECK(contains(r.out, "ips=1")); // two addresses, newline-separated (one newline between them)
    CHECK(lab.job(1)["state"] == "SUCCEEDED");
    const auto base = lab.base_of(1);
    // One Indexed Job (1.22+), else one Job per rank (v1.20).
    CHECK(objects_of("jobs", base).size() == (k8s_minor() >= 22 ? 1u : 2u));
    CHECK(objects_of("services", base).size() == 1);
    auto all = lab.tandem({"logs", "1"});
    CHECK(contains(all.out, "[rank 0] rank=0 of 2"));
    CHECK(contains(all.out, "[rank 1] rank=1 of 2"));
    // A last line without its newline is shown once, ended (each rank's log is read to its end).
    for (const char* tail : {"[rank 0] no-newline-0\n", "[rank 1] no-newline-1\n"}) {
        const auto first = all.out.find(tail);
        CHECK(first != std::string::npos);
        CHECK(all.out.find(tail, first + 1) == std::string::npos);
    }
    auto one = lab.tandem({"logs", "1", "--node", "1"});
    INFO(one);
    CHECK(one.exit_code == 0);
    CHECK(contains(one.out, "rank=1 of 2"));
    CHECK_FALSE(contains(one.out, "rank=0"));
    CHECK_FALSE(contains(one.out, "[rank"));
}

TEST_CASE("secrets reach the process but not the Job, tandem's state or any output") {
    K8sHome lab;
    const auto value = "s3cr3t-" + unique_name("value");
    auto file =
        lab.task("secret", "name: " + unique_name("k8s-secret") +
                               "\nresources:\n  infra: k8s\n"
                               "secrets:\n  E_SECRET:\n"
                               "run: echo \"sha=$(printf %s \"$E_SECRET\" | sha256sum | cut -c1-64)\"\n");
    RunOptions o = lab.options;
    o.env["E_SECRET"] = value;
    auto r = lab.home.tandem({"launch", file, "--secret", "E_SECRET"}, o);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "sha=" + sha256(value))); // the process got the exact value
    const auto base = lab.base_of(1);
    const auto encoded = base64(value);
    auto job_yaml = kubectl({"get", "jobs", "-l", "tandem.dev/job=" + base, "-o", "yaml"});
    REQUIRE(job_yaml.exit_code == 0);
    CHECK(contains(job_yaml.out, "secretKeyRef"));
    CHECK_FALSE(contains(job_yaml.out, value));
    CHECK_FALSE(contains(job_yaml.out, encoded));
    auto pod_yaml = kubectl({"get", "pods", "-l", "tandem.dev/job=" + base, "-o", "yaml"});
    CHECK_FALSE(contains(pod_yaml.out, value));
    // The value lives in the job's Secret only.
    auto secrets = objects_of("secrets", base);
    REQUIRE(secrets.size() == 1);
    CHECK(secrets[0]["data"].value("E_SECRET", "") == encoded);
    for (const auto& args : std::vector<std::vector<std::string>>{{"status", "--all", "--json"},
                                                                  {"logs", "1"},
                                                                  {"plan", file, "--secret", "E_SECRET"},
                                                                  {"status", "1"}}) {
        auto out = lab.home.tandem(args, o);
        CHECK_FALSE(contains(out.out + out.err, value));
    }
    CHECK_FALSE(contains(r.err, value));
    for (const auto& path : list_files(lab.home.tandem_home())) {
        INFO(path);
        CHECK_FALSE(contains(read_file(path).value_or(""), value));
    }
}
