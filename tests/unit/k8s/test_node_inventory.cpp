#include <algorithm>

#include <catch2/catch.hpp>

#include "backends/k8s/node_inventory.hpp"
#include "k8s_fixtures.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

const Pool& pool_named(const ClusterInventory& inv, const std::string& name) {
    auto it = std::find_if(inv.pools.begin(), inv.pools.end(), [&](const Pool& p) { return p.name == name; });
    REQUIRE(it != inv.pools.end());
    return *it;
}

json one_node_list(const json& node) {
    return json{{"kind", "NodeList"}, {"items", json::array({node})}};
}

} // namespace

TEST_CASE("inventory: recorded nodes and pods -> pools by GPU product") {
    const auto nodes = k8s_fixture("inventory_nodes.json");
    const auto pods = k8s_fixture("inventory_pods.json");
    const auto inv = pools_from("k8s/lab", nodes, pods);
    CHECK(inv.name == "k8s/lab");
    CHECK(inv.kind == BackendKind::kubernetes);
    CHECK(inv.reachable);
    std::vector<std::string> names;
    for (const auto& p : inv.pools) {
        names.push_back(p.name);
    }
    CHECK(names == std::vector<std::string>{"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB",
                                            "NVIDIA-H100-80GB-HBM3", "Tesla-T4-SHARED", "cpu", "nvidia-l4"});

    SECTION("H100: one node busy, one with 2 of 8 taken (limits only), one not ready") {
        const auto& p = pool_named(inv, "NVIDIA-H100-80GB-HBM3");
        CHECK(p.accelerator == "H100");
        CHECK(p.gpus_per_node == 8);
        CHECK(p.nodes_total == 3);
        CHECK(p.nodes_free == 0);
        CHECK(p.gpus_total == 24);
        CHECK(p.gpus_free == 6); // the Succeeded pod's 8 GPUs are not held; the NotReady node's are not free
        CHECK(p.cpus_per_node == 63);
        CHECK(p.memory_gb_per_node == 1006.0);
        CHECK(p.node_states == std::vector<std::string>{"NotReady:1", "Ready:2"});
        CHECK(p.mig_profiles.empty());
        CHECK_FALSE(p.time_sliced);
        CHECK_FALSE(p.max_time_minutes);
    }
    SECTION("A100 80GB: cordoned, so nothing free") {
        const auto& p = pool_named(inv, "NVIDIA-A100-SXM4-80GB");
        CHECK(p.accelerator == "A100-80GB");
        CHECK(p.gpus_total == 8);
        CHECK(p.gpus_free == 0);
        CHECK(p.nodes_free == 0);
        CHECK(p.node_states == std::vector<std::string>{"SchedulingDisabled:1"});
        CHECK(p.memory_gb_per_node == 2016.0);
    }
    SECTION("A100 40GB with MIG mixed: profiles with a count, an init container's larger request counts") {
        const auto& p = pool_named(inv, "NVIDIA-A100-SXM4-40GB");
        CHECK(p.accelerator == "A100");
        CHECK(p.gpus_per_node == 4);
        CHECK(p.gpus_free == 2);
        CHECK(p.mig_profiles == std::vector<std::string>{"1g.5gb", "3g.20gb"});
        CHECK(p.shared_total == 9); // 7 of 1g.5gb, 2 of 3g.20gb
        CHECK(p.shared_free == 8);  // one 1g.5gb taken by a running pod
        CHECK_FALSE(p.time_sliced);
        CHECK(p.nodes_free == 0);
    }
    SECTION("T4 time-sliced 4 ways: slices count as physical GPUs") {
        const auto& p = pool_named(inv, "Tesla-T4-SHARED");
        CHECK(p.accelerator == "T4");
        CHECK(p.time_sliced);
        CHECK(p.gpus_per_node == 2); // 8 slices / 4 replicas
        CHECK(p.gpus_free == 1);     // 5 free slices -> 1 whole GPU
        CHECK(p.shared_total == 8);  // but 5 fractional requests fit
        CHECK(p.shared_free == 5);
        CHECK(p.memory_gb_per_node == 64.0);
    }
    SECTION("GKE label, untouched node: free") {
        const auto& p = pool_named(inv, "nvidia-l4");
        CHECK(p.accelerator == "L4");
        CHECK(p.gpus_per_node == 1);
        CHECK(p.gpus_free == 1);
        CHECK(p.nodes_free == 1);
        CHECK(p.cpus_per_node == 7); // 7910m
        CHECK(p.memory_gb_per_node == 26.0);
    }
    SECTION("CPU nodes: DaemonSet and static pods do not make a node busy, a Deployment's pod does") {
        const auto& p = pool_named(inv, "cpu");
        CHECK(p.accelerator.empty());
        CHECK(p.gpus_per_node == 0);
        CHECK(p.gpus_total == 0);
        CHECK(p.nodes_total == 2);
        CHECK(p.nodes_free == 1);
        CHECK(p.cpus_per_node == 8);
        CHECK(p.memory_gb_per_node == 31.25);
        CHECK(p.node_states == std::vector<std::string>{"Ready:2"});
    }
}

TEST_CASE("inventory: label precedence, unlabelled GPUs, renamed shared GPUs, single-strategy MIG") {
    const auto nodes = k8s_fixture("inventory_nodes.json");
    const json empty_pods = {{"kind", "PodList"}, {"items", json::array()}};
    SECTION("gpu.product wins over the cloud's label") {
        auto n = k8s_item(nodes, "gke-l4-0");
        n["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-L4";
        const auto inv = pools_from("c", one_node_list(n), empty_pods);
        REQUIRE(inv.pools.size() == 1);
        CHECK(inv.pools[0].name == "NVIDIA-L4");
        CHECK(inv.pools[0].accelerator == "L4");
    }
    SECTION("Karpenter and gpu.nvidia.com/class labels") {
        auto n = k8s_item(nodes, "cpu-0");
        n["status"]["allocatable"]["nvidia.com/gpu"] = "4";
        n["metadata"]["labels"]["karpenter.k8s.aws/instance-gpu-name"] = "a10g";
        auto inv = pools_from("c", one_node_list(n), empty_pods);
        CHECK(inv.pools.at(0).name == "a10g");
        CHECK(inv.pools.at(0).accelerator == "A10G");
        n["metadata"]["labels"].erase("karpenter.k8s.aws/instance-gpu-name");
        n["metadata"]["labels"]["gpu.nvidia.com/class"] = "A100_NVLINK_80GB";
        inv = pools_from("c", one_node_list(n), empty_pods);
        CHECK(inv.pools.at(0).name == "A100_NVLINK_80GB");
        CHECK(inv.pools.at(0).accelerator == "A100-80GB");
    }
    SECTION("GPUs without a product label: pool gpu, accelerator unknown-gpu") {
        auto n = k8s_item(nodes, "cpu-1");
        n["status"]["allocatable"]["nvidia.com/gpu"] = "8";
        const auto inv = pools_from("c", one_node_list(n), empty_pods);
        REQUIRE(inv.pools.size() == 1);
        CHECK(inv.pools[0].name == "gpu");
        CHECK(inv.pools[0].accelerator == "unknown-gpu");
        CHECK(inv.pools[0].gpus_per_node == 8);
        CHECK(inv.pools[0].gpus_free == 8);
    }
    SECTION("renameByDefault: nvidia.com/gpu.shared marks the pool time-sliced") {
        auto n = k8s_item(nodes, "gpu-t4-0");
        n["status"]["allocatable"].erase("nvidia.com/gpu");
        n["status"]["allocatable"]["nvidia.com/gpu.shared"] = "8";
        n["metadata"]["labels"]["nvidia.com/gpu.product"] = "Tesla-T4";
        json pods = {
            {"items",
             json::array(
                 {{{"spec",
                    {{"nodeName", "gpu-t4-0"},
                     {"containers",
                      json::array({{{"resources", {{"requests", {{"nvidia.com/gpu.shared", "4"}}}}}}})}}},
                   {"status", {{"phase", "Running"}}}}})}};
        const auto inv = pools_from("c", one_node_list(n), pods);
        REQUIRE(inv.pools.size() == 1);
        CHECK(inv.pools[0].time_sliced);
        CHECK(inv.pools[0].gpus_per_node == 2);
        CHECK(inv.pools[0].gpus_free == 1);
    }
    SECTION("MIG single strategy: the product label's -MIG- suffix is the profile") {
        auto n = k8s_item(nodes, "gpu-a100-0");
        n["spec"].erase("unschedulable");
        n["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb";
        n["status"]["allocatable"]["nvidia.com/gpu"] = "56";
        const auto inv = pools_from("c", one_node_list(n), empty_pods);
        REQUIRE(inv.pools.size() == 1);
        CHECK(inv.pools[0].accelerator == "A100-80GB");
        CHECK(inv.pools[0].mig_profiles == std::vector<std::string>{"1g.10gb"});
        CHECK(inv.pools[0].gpus_per_node == 56);
        CHECK(inv.pools[0].nodes_free == 1);
        CHECK(inv.pools[0].node_states == std::vector<std::string>{"Ready:1"});
    }
    SECTION("a node without a Ready condition counts as NotReady") {
        auto n = k8s_item(nodes, "cpu-0");
        n["status"].erase("conditions");
        const auto inv = pools_from("c", one_node_list(n), empty_pods);
        CHECK(inv.pools.at(0).node_states == std::vector<std::string>{"NotReady:1"});
        CHECK(inv.pools.at(0).nodes_free == 0);
    }
}

TEST_CASE("inventory: empty or odd lists give no pools and no crash") {
    CHECK(pools_from("c", json::object(), json::object()).pools.empty());
    CHECK(pools_from("c", json{{"items", nullptr}}, json::array()).pools.empty());
    const auto inv = pools_from("c", json{{"items", json::array({json::object()})}},
                                json{{"items", json::array({1, "x"})}});
    REQUIRE(inv.pools.size() == 1);
    CHECK(inv.pools[0].name == "cpu");
    CHECK(inv.pools[0].node_states == std::vector<std::string>{"NotReady:1"});
}

TEST_CASE("inventory: canonical accelerator names match what specs say") {
    CHECK(canonical_accelerator("NVIDIA-H100-80GB-HBM3") == "H100");
    CHECK(canonical_accelerator("NVIDIA-H100-PCIe") == "H100");
    CHECK(canonical_accelerator("nvidia-h100-80gb") == "H100");
    CHECK(canonical_accelerator("nvidia-h100-mega-80gb") == "H100-MEGA");
    CHECK(canonical_accelerator("NVIDIA-H200") == "H200");
    CHECK(canonical_accelerator("NVIDIA-GH200-480GB") == "GH200");
    CHECK(canonical_accelerator("NVIDIA-A100-SXM4-80GB") == "A100-80GB");
    CHECK(canonical_accelerator("NVIDIA-A100-80GB-PCIe") == "A100-80GB");
    CHECK(canonical_accelerator("NVIDIA-A100-SXM4-40GB") == "A100");
    CHECK(canonical_accelerator("nvidia-tesla-a100") == "A100");
    CHECK(canonical_accelerator("nvidia-a100-80gb") == "A100-80GB");
    CHECK(canonical_accelerator("A100_NVLINK_80GB") == "A100-80GB");
    CHECK(canonical_accelerator("Tesla-V100-SXM2-32GB") == "V100-32GB");
    CHECK(canonical_accelerator("Tesla-V100-SXM2-16GB") == "V100");
    CHECK(canonical_accelerator("nvidia-tesla-t4") == "T4");
    CHECK(canonical_accelerator("t4g") == "T4g");
    CHECK(canonical_accelerator("Tesla-T4-SHARED") == "T4");
    CHECK(canonical_accelerator("nvidia-l4") == "L4");
    CHECK(canonical_accelerator("NVIDIA-L40S") == "L40S");
    CHECK(canonical_accelerator("NVIDIA-L40") == "L40");
    CHECK(canonical_accelerator("NVIDIA-A10G") == "A10G");
    CHECK(canonical_accelerator("NVIDIA-RTX-A6000") == "A6000");
    CHECK(canonical_accelerator("NVIDIA-RTX-6000-Ada-Generation") == "RTX6000-ADA-GENERATION");
    CHECK(canonical_accelerator("NVIDIA-GeForce-RTX-4090") == "RTX4090");
    CHECK(canonical_accelerator("NVIDIA-GeForce-RTX-4090-SHARED") == "RTX4090");
    CHECK(canonical_accelerator("NVIDIA-B200") == "B200");
}
