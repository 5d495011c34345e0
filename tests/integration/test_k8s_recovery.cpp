// Recovery (issue 32) on Kubernetes: resources.job_recovery through the Job controller's own retries
// (backoffLimit) and, from 1.26, a podFailurePolicy that replaces disrupted pods and the
// recover_on_exit_codes without counting them. No tandem process runs between `launch -d` and the end:
// the tests only poll `status`. The testbed's pods are processes of this machine, so a marker file in
// the test's folder tells a first attempt from a later one.

#include <catch2/catch.hpp>

#include <thread>

#include "k8s_testbed.hpp"

using namespace tandem_test;

namespace {

// A run script that fails with `code` the first time (leaving `marker`) and succeeds the next.
std::string fail_once(const std::string& marker, int code) {
    return "run: |\n  if [ ! -f " + marker + " ]; then touch " + marker + "; echo failing-once; exit " +
           std::to_string(code) + "; fi\n  echo second-time-lucky\n";
}

nlohmann::json job_object(const std::string& base) {
    auto jobs = objects_of("jobs", base);
    REQUIRE(jobs.size() == 1);
    return jobs[0];
}

} // namespace

TEST_CASE("recovery: a pod failing once with max_restarts_on_errors 2 is retried by the Job controller and "
          "reports 1 recovery") {
    K8sHome lab;
    const auto marker = lab.home.path("flaky.marker");
    auto file = lab.task("flaky", "name: " + unique_name("k8s-flaky") +
                                      "\nresources:\n  infra: k8s\n  job_recovery:\n    max_restarts_on_errors: 2\n" +
                                      fail_once(marker, 3));
    const int id = lab.launch_detached(file);
    auto j = lab.wait_terminal(id, 120s);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["exit_code"] == 0);
    CHECK(j["recoveries"] == 1);
    REQUIRE(j["recovered_attempts"].size() == 1);
    CHECK(j["recovered_attempts"][0]["reason"] == "exit code 3");
    CHECK(j["recovered_attempts"][0]["counted"] == true);
    CHECK(lab.tandem({"status", std::to_string(id), "--exit-code"}).exit_code == 0);
    CHECK(contains(lab.tandem({"status", std::to_string(id)}).out, "exit code 0, after 1 recovery (exit code 3)"));
    // The Job the cluster holds: the retries are its backoffLimit.
    const auto job = job_object(lab.base_of(id));
    CHECK(job["spec"]["backoffLimit"] == 2);
    CHECK(job["status"].value("failed", 0) == 1);
    CHECK(job["spec"].contains("podFailurePolicy") == (k8s_minor() >= 26));
    // Every attempt's output, the second after its marker.
    auto logs = lab.tandem({"logs", std::to_string(id)});
    INFO(logs);
    CHECK(out_of_order(logs.out, {"tandem: attempt 1", "failing-once",
                                  "tandem: attempt 2 (the previous pod: exit code 3)", "second-time-lucky"}) == "");
}

TEST_CASE("recovery: a Kubernetes job using up its restarts fails with its last exit code") {
    K8sHome lab;
    auto file = lab.task("always", "name: " + unique_name("k8s-always") +
                                       "\nresources:\n  infra: k8s\n  job_recovery: {max_restarts_on_errors: 1}\n"
                                       "run: echo try; exit 4\n");
    const int id = lab.launch_detached(file);
    auto j = lab.wait_terminal(id, 120s);
    std::string pods;
    for (const auto& pod : objects_of("pods", lab.base_of(id))) {
        pods += pod["metadata"].dump() + "\n" + pod["status"].dump() + "\n";
    }
    INFO(j.dump());
    INFO(pods);
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 4);
    CHECK(j["recoveries"] == 1);
    CHECK(j["reason"] == "exit code 4");
    CHECK(lab.tandem({"status", std::to_string(id), "--exit-code"}).exit_code == 4);
    CHECK(contains(lab.tandem({"status", std::to_string(id)}).out, "exit code 4, after 1 recovery (exit code 4)"));
}

TEST_CASE("recovery: launch --wait returns the last attempt's exit code") {
    K8sHome lab;
    const auto marker = lab.home.path("wait.marker");
    auto file = lab.task("wait", "name: " + unique_name("k8s-wait") +
                                     "\nresources:\n  infra: k8s\n  job_recovery: {max_restarts_on_errors: 1}\n"
                                     "run: |\n  if [ ! -f " + marker + " ]; then touch " + marker +
                                     "; exit 3; fi\n  exit 5\n");
    auto r = lab.tandem({"launch", "--wait", file}, 180s);
    INFO(r);
    std::string pods; // what the cluster held, for a failure's message
    for (const auto& pod : objects_of("pods", lab.base_of(1))) {
        pods += pod["metadata"].dump() + "\n" + pod["status"].dump() + "\n";
    }
    INFO(pods);
    CHECK(r.exit_code == 5); // the second attempt's code, not the first's
    CHECK(contains(r.err, "exit code 5, after 1 recovery (exit code 3)"));
}

TEST_CASE("recovery: recover_on_exit_codes are replaced without counting (podFailurePolicy), refused before 1.26") {
    K8sHome lab;
    const auto marker = lab.home.path("code7.marker");
    auto file = lab.task("code7", "name: " + unique_name("k8s-code7") +
                                      "\nresources:\n  infra: k8s\n  job_recovery:\n    max_restarts_on_errors: 0\n"
                                      "    recover_on_exit_codes: [7]\n" +
                                      fail_once(marker, 7));
    if (k8s_minor() < 26) {
        auto r = lab.tandem({"launch", "-d", file});
        INFO(r);
        CHECK(r.exit_code != 0);
        CHECK(contains(r.err, "recover_on_exit_codes needs a Job podFailurePolicy, which Kubernetes has from 1.26"));
        return;
    }
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    CHECK(contains(plan.out, "podFailurePolicy"));
    CHECK(contains(plan.out, "DisruptionTarget"));
    const int id = lab.launch_detached(file);
    auto j = lab.wait_terminal(id, 120s);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["recoveries"] == 1);
    REQUIRE(j["recovered_attempts"].size() == 1);
    CHECK(j["recovered_attempts"][0]["reason"] == "exit code 7 (recover_on_exit_codes)");
    CHECK(j["recovered_attempts"][0]["counted"] == false);
    const auto job = job_object(lab.base_of(id));
    CHECK(job["spec"]["backoffLimit"] == 0);
    CHECK(job["status"].value("failed", 0) == 0); // ignored by the policy: not a counted failure
}

TEST_CASE("recovery: a pod evicted through the Eviction API is replaced and the job succeeds") {
    K8sHome lab;
    const auto marker = lab.home.path("evict.marker");
    // From 1.26 the eviction does not count (podFailurePolicy: DisruptionTarget), so no restart is allowed
    // at all; before 1.26 it counts as a failed pod, so one is.
    const int restarts = k8s_minor() >= 26 ? 0 : 1;
    auto file = lab.task("evict", "name: " + unique_name("k8s-evict") +
                                      "\nresources:\n  infra: k8s\n  job_recovery:\n    max_restarts_on_errors: " +
                                      std::to_string(restarts) + "\nrun: |\n  if [ -f " + marker +
                                      " ]; then echo replacement-ran; exit 0; fi\n  touch " + marker +
                                      "\n  echo first-pod-running\n  sleep 300\n");
    const int id = lab.launch_detached(file);
    auto running = lab.wait_state(id, "RUNNING", 90s);
    INFO(running.dump());
    REQUIRE(running["state"] == "RUNNING");
    const auto base = lab.base_of(id);
    auto pods = objects_of("pods", base);
    REQUIRE(pods.size() == 1);
    const std::string pod = pods[0]["metadata"]["name"];
    // What `kubectl drain` does for each pod: a policy/v1 Eviction (v1beta1 before 1.22).
    const auto eviction =
        lab.home.write("eviction.json", std::string("{\"apiVersion\":\"") +
                                            (k8s_minor() >= 22 ? "policy/v1" : "policy/v1beta1") +
                                            "\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"" + pod +
                                            "\",\"namespace\":\"" + k8s_setting("K8S_NAMESPACE") + "\"}}");
    auto evicted = kubectl({"create", "--raw",
                            "/api/v1/namespaces/" + k8s_setting("K8S_NAMESPACE") + "/pods/" + pod + "/eviction",
                            "-f", eviction});
    INFO(evicted);
    REQUIRE(evicted.exit_code == 0);
    auto j = lab.wait_terminal(id, 150s);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["exit_code"] == 0);
    if (k8s_minor() >= 26) {
        const auto job = job_object(base);
        CHECK(job["status"].value("failed", 0) == 0); // the eviction was not counted against backoffLimit
    }
    auto logs = lab.tandem({"logs", std::to_string(id)});
    INFO(logs);
    CHECK(contains(logs.out, "replacement-ran"));
}

TEST_CASE("recovery: a local workdir with job_recovery is refused on Kubernetes with the reason") {
    K8sHome lab;
    lab.home.write("code/train.py", "print('hi')\n");
    auto file = lab.task("wd", "name: " + unique_name("k8s-wd") + "\nworkdir: " + lab.home.path("code") +
                                   "\nresources:\n  infra: k8s\n  job_recovery: {max_restarts_on_errors: 1}\n"
                                   "run: python3 train.py\n");
    auto r = lab.tandem({"plan", file});
    INFO(r);
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, "resources.job_recovery: a replacement pod would start without the workdir"));
}
