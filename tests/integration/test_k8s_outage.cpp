// Tests that take the Kubernetes testbed for themselves, so they run alone (RUN_SERIAL): one stops and
// restarts the API server, one holds every GPU of the GPU node for a while.

#include <thread>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"

using namespace tandem_test;

namespace {

// Stops the API server for its lifetime.
struct ApiOutage {
    ApiOutage() { k8s_testbed({"stop-api"}); }
    ~ApiOutage() { k8s_testbed({"start-api"}, false); }
    ApiOutage(const ApiOutage&) = delete;
    ApiOutage& operator=(const ApiOutage&) = delete;
};

} // namespace

TEST_CASE("the API server stopped: status shows UNKNOWN with the last known state and its age") {
    K8sHome lab;
    auto file = lab.task("long", "name: " + unique_name("k8s-outage") +
                                     "\nresources:\n  infra: k8s\n"
                                     "run: sleep 300\n");
    const int id = lab.launch_detached(file);
    REQUIRE(lab.wait_state(id, "RUNNING", 60s)["state"] == "RUNNING");

    RunResult status, as_json, exit_code, cancel;
    {
        ApiOutage outage; // the API server comes back even when a check below throws
        status = lab.tandem({"status"}, 60s);
        as_json = lab.tandem({"status", "--json"}, 60s);
        exit_code = lab.tandem({"status", std::to_string(id), "--exit-code"}, 60s);
        cancel = lab.tandem({"cancel", std::to_string(id)}, 60s);
    }

    INFO(status);
    CHECK(status.exit_code == 0);
    CHECK(contains(status.out, "UNKNOWN (was RUNNING"));
    CHECK(status.elapsed < 20s); // a refused connection is not waited out
    auto parsed = nlohmann::json::parse(as_json.out, nullptr, false);
    REQUIRE(parsed.is_object());
    const auto& j = parsed["jobs"][0];
    CHECK(j["state"] == "UNKNOWN");
    CHECK(j["last_known_state"] == "RUNNING");
    CHECK(j["state_age_seconds"].get<int>() >= 0);
    CHECK(contains(j["reason"].get<std::string>(), "lab"));
    CHECK(exit_code.exit_code == 104);
    INFO(cancel);
    CHECK(cancel.exit_code == 5); // unreachable: nothing was cancelled, and tandem says so
    CHECK(cancel.err_lines_starting("tandem: error: ").size() == 1);

    // Back up: the job is seen running again (the node agent kept it) and can be cancelled.
    auto back = lab.wait_state(id, "RUNNING", 60s);
    CHECK(back["state"] == "RUNNING");
    CHECK(lab.tandem({"cancel", std::to_string(id)}).exit_code == 0);
    CHECK(wait_all_gone(lab.base_of(id)).empty());
}

TEST_CASE("logs -f of a pending job waits until it runs, then streams") {
    K8sHome lab;
    const std::string gpus = "H100:8"; // every GPU of the GPU node
    auto hog =
        lab.task("hog", "name: " + unique_name("k8s-hog") +
                            "\nresources:\n  infra: k8s\n  accelerators: " + gpus + "\nrun: sleep 300\n");
    auto waiter = lab.task("waiter", "name: " + unique_name("k8s-waiter") +
                                         "\nresources:\n  infra: k8s\n  accelerators: " + gpus +
                                         "\nrun: echo streamed-after-pending; exit 4\n");
    const int hog_id = lab.launch_detached(hog);
    REQUIRE(lab.wait_state(hog_id, "RUNNING", 60s)["state"] == "RUNNING");
    const int id = lab.launch_detached(waiter);
    nlohmann::json j;
    for (int i = 0; i < 60; ++i) {
        j = lab.job(id);
        if (contains(j["reason"].get<std::string>(), "Insufficient nvidia.com/gpu")) {
            break;
        }
        std::this_thread::sleep_for(300ms);
    }
    REQUIRE(j["state"] == "PENDING");
    CHECK(contains(j["reason"].get<std::string>(), "Insufficient nvidia.com/gpu"));

    auto follower = lab.start({"logs", std::to_string(id), "-f"}, 120s);
    std::this_thread::sleep_for(2s);
    CHECK_FALSE(process_gone(follower.pid())); // nothing to show yet: it waits
    auto c = lab.tandem({"cancel", std::to_string(hog_id)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    auto r = follower.wait();
    INFO(r);
    CHECK(r.exit_code == 4);
    CHECK(contains(r.out, "streamed-after-pending"));
    CHECK(lab.job(id)["state"] == "FAILED");
    CHECK(wait_all_gone(lab.base_of(hog_id)).empty());
}
