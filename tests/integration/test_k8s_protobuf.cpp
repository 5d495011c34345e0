// The protobuf status Lists against the real API server: for the same pods and Jobs (failed with an exit
// code, running, unschedulable, a job of two ranks), the protobuf decoder gives exactly what the JSON
// skimmer gives, so `tandem status` maps the same states from either encoding.

#include <thread>

#include <catch2/catch.hpp>

#include "backends/k8s/job_state_proto.hpp"
#include "backends/k8s/job_state_skim.hpp"
#include "k8s_testbed.hpp"
#include "net/http_client.hpp"

using namespace tandem_test;
using nlohmann::json;

namespace {

struct Both {
    json from_json;
    json from_proto;
};

// One GET of `path` in each encoding, repeated until both saw the same resourceVersion (nothing changed
// in between).
Both get_both(const std::string& path) {
    tandem::net::TlsSettings tls;
    tls.ca_file = k8s_setting("K8S_CA");
    tandem::net::CurlHttpClient http(tls);
    auto get = [&](const std::string& accept) {
        tandem::net::HttpRequest request;
        request.url = k8s_setting("K8S_SERVER") + path;
        request.headers = {{"Accept", accept}, {"Authorization", "Bearer " + k8s_setting("K8S_TOKEN")}};
        auto response = http.request(request);
        INFO((response ? std::string() : response.error().message));
        REQUIRE(response);
        REQUIRE(response->status == 200);
        return *response;
    };
    for (int attempt = 0; attempt < 20; ++attempt) {
        const auto text = get("application/json");
        const auto proto = get(std::string(tandem::k8s::k_protobuf_media_type));
        CHECK(proto.header("content-type").value_or("") == tandem::k8s::k_protobuf_media_type);
        auto skimmed = tandem::k8s::skim_status_list(text.body);
        auto decoded = tandem::k8s::decode_status_list(proto.body);
        INFO((decoded ? std::string() : decoded.error().message));
        REQUIRE(skimmed);
        REQUIRE(decoded);
        if ((*skimmed)["metadata"]["resourceVersion"] == (*decoded)["metadata"]["resourceVersion"]) {
            CHECK(proto.body.size() < text.body.size());
            return {*skimmed, *decoded};
        }
        std::this_thread::sleep_for(200ms);
    }
    FAIL("the list kept changing between the two GETs");
    return {};
}

// The items of `list` that belong to job `base`.
std::vector<json> items_of(const json& list, const std::string& base) {
    std::vector<json> out;
    for (const auto& item : list["items"]) {
        if (item["metadata"]["labels"].value("tandem.dev/job", "") == base) {
            out.push_back(item);
        }
    }
    return out;
}

} // namespace

TEST_CASE("protobuf and JSON status Lists of the same pods and Jobs read alike") {
    K8sHome lab;
    const int failed = lab.launch_detached(lab.task(
        "three", "name: " + unique_name("k8s-pb-exit3") + "\nresources:\n  infra: k8s\nrun: exit 3\n"));
    const int running = lab.launch_detached(
        lab.task("two", "name: " + unique_name("k8s-pb-two") +
                            "\nnum_nodes: 2\nresources:\n  infra: k8s\nrun: sleep 120\n"));
    const int pending = lab.launch_detached(
        lab.task("big", "name: " + unique_name("k8s-pb-big") +
                            "\nresources:\n  infra: k8s\n  accelerators: H100:1\n"
                            "config:\n  kubernetes:\n    pod_config:\n      spec:\n        containers:\n"
                            "          - resources:\n              limits: {nvidia.com/gpu: 16}\n"
                            "              requests: {nvidia.com/gpu: 16}\n"
                            "run: echo never\n"));
    CHECK(lab.wait_terminal(failed)["state"] == "FAILED");
    CHECK(lab.wait_state(running, "RUNNING")["state"] == "RUNNING");
    nlohmann::json p;
    for (int i = 0; i < 60; ++i) { // until the scheduler's verdict is on the pod
        p = lab.job(pending);
        if (p["reason"].get<std::string>().find("Insufficient") != std::string::npos) {
            break;
        }
        std::this_thread::sleep_for(300ms);
    }
    REQUIRE(p["state"] == "PENDING");

    const std::string ns = k8s_setting("K8S_NAMESPACE");
    const std::string selector = "?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dtandem";
    const Both pods = get_both("/api/v1/namespaces/" + ns + "/pods" + selector);
    CHECK(pods.from_proto == pods.from_json);
    const Both jobs = get_both("/apis/batch/v1/namespaces/" + ns + "/jobs" + selector);
    CHECK(jobs.from_proto == jobs.from_json);

    // The comparison covered the shapes that matter: an exit code, an unschedulable condition, ranks.
    const auto exit3 = items_of(pods.from_proto, lab.base_of(failed));
    REQUIRE(exit3.size() == 1);
    CHECK(exit3[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3);
    const auto big = items_of(pods.from_proto, lab.base_of(pending));
    REQUIRE(big.size() == 1);
    CHECK(big[0]["status"]["conditions"][0]["reason"] == "Unschedulable");
    const auto ranks = items_of(pods.from_proto, lab.base_of(running));
    REQUIRE(ranks.size() == 2);
    CHECK(ranks[0]["metadata"]["labels"].contains("tandem.dev/job"));
    CHECK(items_of(jobs.from_proto, lab.base_of(failed)).size() == 1);
    // And tandem itself, which reads protobuf, saw them as above.
    CHECK(lab.job(failed)["exit_code"] == 3);
}
