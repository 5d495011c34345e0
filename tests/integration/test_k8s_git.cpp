// SkyPilot tasks as people write them, on the real Kubernetes control plane (scripts/testbed/k8s): a git
// workdir cloned in every pod before setup, and SkyPilot's Kubernetes settings (remote_identity,
// custom_metadata, set_pod_resource_limits) as a namespace-only user sees them on the objects.

#include <catch2/catch.hpp>

#include "git_server.hpp"
#include "k8s_testbed.hpp"

using namespace tandem_test;

TEST_CASE("a git workdir is cloned in every pod and the job runs in it (1 and 2 ranks)") {
    GitServer git(k8s_setting("K8S_POD_GATEWAY"));
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_CERT"));
    for (int nodes : {1, 2}) {
        INFO(nodes << " rank(s)");
        const auto name = unique_name("k8s-git");
        auto file = lab.task("git", "name: " + name + "\nnum_nodes: " + std::to_string(nodes) +
                                        "\nworkdir:\n  url: " + git.url_on(k8s_setting("K8S_POD_GATEWAY")) +
                                        "\n  ref: v1\nresources:\n  infra: k8s\n"
                                        "setup: test -f version.txt\n"
                                        "run: echo \"rank=$TANDEM_NODE_RANK version=$(cat version.txt) "
                                        "head=$(git rev-parse HEAD)\"\n");
        auto r = lab.tandem({"launch", file}, 180s);
        INFO(r);
        REQUIRE(r.exit_code == 0);
        const std::string head = git.commit_of("v1");
        for (int rank = 0; rank < nodes; ++rank) {
            CHECK(contains(r.out, "rank=" + std::to_string(rank) + " version=v1 head=" + head));
        }
    }
}

TEST_CASE("a git workdir that cannot be cloned fails the pod before setup, with git's message") {
    GitServer git(k8s_setting("K8S_POD_GATEWAY"));
    K8sHome lab;
    const auto name = unique_name("k8s-git-bad");
    auto file = lab.task("git", "name: " + name + "\nworkdir:\n  url: " + git.url_on(k8s_setting("K8S_POD_GATEWAY")) +
                                    "\n  ref: no-such-branch\nresources:\n  infra: k8s\n"
                                    "setup: echo setup-ran\nrun: echo run-ran\n");
    auto r = lab.tandem({"launch", file}, 180s);
    INFO(r);
    CHECK(r.exit_code == 128);
    CHECK(contains(r.out, "Remote branch no-such-branch not found"));
    CHECK_FALSE(contains(r.out, "setup-ran"));
}

TEST_CASE("remote_identity, custom_metadata and set_pod_resource_limits reach the Job and its pods") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_EXEC"));
    const auto name = unique_name("k8s-sky");
    auto file = lab.task("sky", "name: " + name +
                                    "\nresources:\n  infra: k8s\n  cpus: 1\n  memory: 1\n"
                                    "config:\n  kubernetes:\n    remote_identity: tandem\n"
                                    "    custom_metadata:\n      labels: {cost-center: research}\n"
                                    "      annotations: {owner: alice}\n"
                                    "    set_pod_resource_limits: 2\n"
                                    "run: echo ran\n");
    const int id = lab.launch_detached(file);
    REQUIRE(lab.wait_terminal(id)["state"] == "SUCCEEDED");
    const auto base = lab.base_of(id);
    auto jobs = objects_of("jobs", base);
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0]["metadata"]["labels"]["cost-center"] == "research");
    CHECK(jobs[0]["metadata"]["annotations"]["owner"] == "alice");
    auto pods = objects_of("pods", base);
    REQUIRE(pods.size() == 1);
    CHECK(pods[0]["spec"]["serviceAccountName"] == "tandem");
    CHECK(pods[0]["metadata"]["labels"]["cost-center"] == "research");
    const auto& res = pods[0]["spec"]["containers"][0]["resources"];
    CHECK(res["requests"]["cpu"] == "1");
    CHECK(res["limits"]["cpu"] == "2");
    CHECK(res["limits"]["memory"] == "2Gi");
}
