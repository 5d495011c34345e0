// pools_from on the v1.20 testbed's nodes (cpu-node; gpu-node with 8 H100; mig-node with an A100 split
// into seven 1g.10gb MIG devices and no whole GPU) and the pods of the recorded status namespace (3 GPUs
// held on gpu-node by running pods; failed and succeeded pods hold nothing).

#include <catch2/catch.hpp>

#include "backends/k8s/node_inventory.hpp"
#include "k8s_fixtures.hpp"

using namespace tandem;
using namespace tandem::k8s;

TEST_CASE("inventory recorded: the testbed's three nodes") {
    const auto inv = pools_from("k8s/testbed", k8s_fixture("recorded-v1.20/nodes.json"),
                                k8s_fixture("recorded-v1.20/pods_all_namespaces.json"));
    REQUIRE(inv.pools.size() == 3);

    const auto& mig = inv.pools[0];
    CHECK(mig.name == "NVIDIA-A100-SXM4-80GB");
    CHECK(mig.accelerator == "A100-80GB");
    CHECK(mig.gpus_per_node == 0); // MIG devices only: no whole GPU to give
    CHECK(mig.mig_profiles == std::vector<std::string>{"1g.10gb"});
    CHECK(mig.shared_total == 7);
    CHECK(mig.shared_free == 7);
    CHECK(mig.cpus_per_node == 32);
    CHECK(mig.memory_gb_per_node == 256.0);
    CHECK(mig.nodes_free == 1);

    const auto& h100 = inv.pools[1];
    CHECK(h100.name == "NVIDIA-H100-80GB-HBM3");
    CHECK(h100.accelerator == "H100");
    CHECK(h100.gpus_per_node == 8);
    CHECK(h100.gpus_total == 8);
    CHECK(h100.gpus_free == 5);
    CHECK(h100.nodes_free == 0);
    CHECK(h100.cpus_per_node == 64);
    CHECK(h100.memory_gb_per_node == 512.0);
    CHECK(h100.node_states == std::vector<std::string>{"Ready:1"});

    const auto& cpu = inv.pools[2];
    CHECK(cpu.name == "cpu");
    CHECK(cpu.accelerator.empty());
    CHECK(cpu.cpus_per_node == 16);
    CHECK(cpu.memory_gb_per_node == 64.0);
    CHECK(cpu.nodes_free == 0); // the missing-Secret pod is bound to it
}
