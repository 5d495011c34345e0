// Waiting, cancelling, following and credentials against the real Kubernetes control plane
// (scripts/testbed/k8s): the scheduler's own pending reasons, cancel through the garbage collector,
// `logs -f` through the API server, a refused token, an exec credential plugin, and a create whose answer
// is lost on the way back.

#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"
#include "tls_drop_proxy.hpp"

using namespace tandem_test;

namespace {

// A task that no node can run: the planner sees one H100 asked for, the pod asks the scheduler for 16.
std::string unschedulable_task(const std::string& name) {
    return "name: " + name +
           "\nresources:\n  infra: k8s\n  accelerators: H100:1\n"
           "secrets:\n  E_TOKEN: never-used\n"
           "config:\n  kubernetes:\n    pod_config:\n      spec:\n        containers:\n"
           "          - resources:\n              limits: {nvidia.com/gpu: 16}\n"
           "              requests: {nvidia.com/gpu: 16}\n"
           "run: echo never\n";
}

} // namespace

TEST_CASE("more GPUs than any node has: PENDING with the scheduler's reason, and cancel leaves nothing") {
    // As the exec-plugin user, whose Role has no deletecollection (nor patch): cancel needs neither.
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_EXEC"));
    const int id = lab.launch_detached(lab.task("big", unschedulable_task(unique_name("k8s-toobig"))));
    nlohmann::json j;
    for (int i = 0; i < 60; ++i) { // the scheduler's verdict reaches the pod's condition within a second
        j = lab.job(id);
        if (contains(j["reason"].get<std::string>(), "Insufficient")) {
            break;
        }
        std::this_thread::sleep_for(300ms);
    }
    CHECK(j["state"] == "PENDING");
    CHECK(contains(j["reason"].get<std::string>(), "Insufficient nvidia.com/gpu"));
    auto table = lab.tandem({"status"});
    INFO(table);
    CHECK(contains(table.out, "PENDING"));
    CHECK(contains(table.out, "Insufficient nvidia.com/gpu"));
    CHECK(lab.tandem({"status", std::to_string(id), "--exit-code"}).exit_code == 101);

    const auto base = lab.base_of(id);
    REQUIRE(objects_of("jobs", base).size() == 1);
    REQUIRE(objects_of("secrets", base).size() == 1);
    auto c = lab.tandem({"cancel", std::to_string(id)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    CHECK(lab.job(id)["state"] == "CANCELLED");
    CHECK(wait_all_gone(base).empty());
}

TEST_CASE("cancel of a running 2-node job leaves no Job, pod, Service or Secret") {
    // As each namespace-only user (get, list, watch, create, delete; no deletecollection, no patch).
    const auto user = GENERATE(as<std::string>{}, "K8S_KUBECONFIG_CERT", "K8S_KUBECONFIG_EXEC");
    INFO("kubeconfig " << user);
    K8sHome lab(k8s_setting(user));
    const auto name = unique_name("k8s-cancel");
    const auto marker = "/tmp/" + name + ".alive";
    auto file = lab.task("long", "name: " + name +
                                     "\nnum_nodes: 2\nresources:\n  infra: k8s\n"
                                     "secrets:\n  E_TOKEN: abc\n"
                                     "run: |\n  touch " +
                                     marker + ".$TANDEM_NODE_RANK\n  sleep 300\n");
    const int id = lab.launch_detached(file);
    auto j = lab.wait_state(id, "RUNNING", 60s);
    REQUIRE(j["state"] == "RUNNING");
    const auto base = lab.base_of(id);
    CHECK(objects_of("jobs", base).size() == (k8s_minor() >= 22 ? 1u : 2u)); // Indexed, or one per rank
    CHECK(objects_of("services", base).size() == 1);
    CHECK(objects_of("secrets", base).size() == 1);
    // Both ranks' processes really run.
    for (int i = 0; i < 40 && !(file_exists(marker + ".0") && file_exists(marker + ".1")); ++i) {
        std::this_thread::sleep_for(250ms);
    }
    CHECK(file_exists(marker + ".0"));
    CHECK(file_exists(marker + ".1"));
    std::filesystem::remove(marker + ".0");
    std::filesystem::remove(marker + ".1");

    auto c = lab.tandem({"cancel", std::to_string(id)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    CHECK(lab.job(id)["state"] == "CANCELLED");
    CHECK(wait_all_gone(base).empty());
    // Cancelling again: already ended, noted, nothing to do.
    auto again = lab.tandem({"cancel", std::to_string(id)});
    CHECK(again.exit_code == 0);
}

TEST_CASE("logs -f follows a running job and exits with its code") {
    K8sHome lab;
    const auto name = unique_name("k8s-follow");
    const auto go = "/tmp/" + name + ".go";
    auto file = lab.task("follow", "name: " + name +
                                       "\nresources:\n  infra: k8s\n"
                                       "run: |\n  echo first-line\n"
                                       "  while [ ! -e " +
                                       go + " ]; do sleep 0.2; done\n  echo after-go\n  exit 7\n");
    const int id = lab.launch_detached(file);
    auto follower = lab.start({"logs", std::to_string(id), "-f"}, 90s);
    // The job prints its first line and then waits for us: the follower must still be following.
    bool first = false;
    for (int i = 0; i < 120 && !first; ++i) {
        first = contains(lab.tandem({"logs", std::to_string(id)}).out, "first-line");
        std::this_thread::sleep_for(250ms);
    }
    REQUIRE(first);
    std::this_thread::sleep_for(1s);
    CHECK_FALSE(process_gone(follower.pid()));
    std::ofstream(go).put('\n');
    auto r = follower.wait();
    std::filesystem::remove(go);
    INFO(r);
    CHECK(r.exit_code == 7);
    CHECK(contains(r.out, "first-line\nafter-go\n"));
    CHECK(lab.job(id)["exit_code"] == 7);
}

TEST_CASE("a wrong token: check and launch fail with one line naming the context, exit 4, no token") {
    const auto bad = k8s_setting("K8S_BAD_TOKEN");
    // Discovered from KUBECONFIG (no config.yaml): the cluster is k8s/<context>.
    TempHome home;
    RunOptions o;
    o.env["KUBECONFIG"] = k8s_setting("K8S_KUBECONFIG_BADTOKEN");
    auto check = home.tandem({"check"}, o);
    INFO(check);
    CHECK(check.exit_code == 4);
    const auto rows = split_lines(check.out);
    int bad_rows = 0;
    for (const auto& row : rows) {
        if (contains(row, "wrong-token@tandem-testbed")) {
            ++bad_rows;
            CHECK(contains(row, "401 Unauthorized"));
        }
    }
    CHECK(bad_rows == 1);
    CHECK_FALSE(contains(check.out + check.err, bad));

    // Configured as the only cluster: launch names it, the context, and exits 4.
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_BADTOKEN"));
    auto file =
        lab.task("any", "name: " + unique_name("k8s-badtoken") + "\nresources:\n  infra: k8s\nrun: true\n");
    auto r = lab.tandem({"launch", "-d", file});
    INFO(r);
    CHECK(r.exit_code == 4);
    auto errors = r.err_lines_starting("tandem: error: ");
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "lab"));
    CHECK(contains(errors[0], "wrong-token@tandem-testbed"));
    CHECK(contains(errors[0], "401"));
    CHECK_FALSE(contains(r.out + r.err, bad));
    CHECK(lab.tandem({"check"}).exit_code == 4);
}

TEST_CASE("an exec-plugin kubeconfig works end to end, with namespace-only rights") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_EXEC"));
    auto check = lab.tandem({"check"});
    INFO(check);
    CHECK(check.exit_code == 0);
    CHECK(contains(check.out, "user tandem-exec-user"));
    auto file = lab.task("exec", "name: " + unique_name("k8s-exec") +
                                     "\nresources:\n  infra: k8s\n  accelerators: H100:1\n"
                                     "run: echo exec-user-ran\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "exec-user-ran"));
    CHECK(lab.job(1)["state"] == "SUCCEEDED");
    auto infra = lab.tandem({"infra"});
    INFO(infra);
    CHECK(infra.exit_code == 0);
    CHECK(contains(infra.out, k8s_setting("K8S_GPU_PRODUCT")));
}

TEST_CASE("a create whose answer is lost is retried without making a second Job") {
    const auto server = k8s_setting("K8S_SERVER");
    const int api_port = std::stoi(server.substr(server.rfind(':') + 1));
    // Padding makes the Job's POST the only request over 6000 bytes.
    TlsDropProxy proxy(api_port, 6000);
    const std::string proxied = "https://127.0.0.1:" + std::to_string(proxy.port());
    auto admin = read_file(k8s_setting("K8S_KUBECONFIG"));
    REQUIRE(admin);
    std::string text = *admin;
    const auto at = text.find(server);
    REQUIRE(at != std::string::npos);
    text.replace(at, server.size(), proxied);
    TempHome scratch;
    const auto kubeconfig = scratch.write("kubeconfig", text);
    K8sHome lab(kubeconfig);
    const auto name = unique_name("k8s-once");
    auto file = lab.task("once", "name: " + name + "\nresources:\n  infra: k8s\nenvs:\n  PADDING: " +
                                     std::string(8000, 'x') + "\nrun: echo once-ran\n");
    auto r = lab.tandem({"launch", "-d", file});
    INFO(r);
    REQUIRE(proxy.dropped() == 1); // the first answer really was lost
    CHECK(r.exit_code == 0);
    auto jobs = kubectl({"get", "jobs", "-o", "json"});
    REQUIRE(jobs.exit_code == 0);
    std::vector<std::string> ours;
    const auto listed = nlohmann::json::parse(jobs.out); // kept: a range-for over a temporary's item dangles
    for (const auto& job : listed["items"]) {
        const auto job_name = job["metadata"].value("name", "");
        if (job_name.rfind(name + "-", 0) == 0) {
            ours.push_back(job_name);
        }
    }
    CHECK(ours == std::vector<std::string>{lab.base_of(1)});
    if (r.exit_code == 0) {
        CHECK(lab.wait_terminal(1)["state"] == "SUCCEEDED");
    }
}
