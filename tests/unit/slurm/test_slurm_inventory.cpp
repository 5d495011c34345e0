#include <catch2/catch.hpp>

#include "backends/slurm/slurm_inventory.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {

SlurmNode node(std::string name, std::string state, int cpus, int alloc, std::string gres, std::string used) {
    SlurmNode n;
    n.name = std::move(name);
    n.state = std::move(state);
    n.cpus = cpus;
    n.alloc_cpus = alloc;
    n.real_memory_mb = 64 * 1024;
    n.gres = std::move(gres);
    n.gres_used = std::move(used);
    return n;
}

} // namespace

TEST_CASE("gpu gres strings give type and count") {
    CHECK(gpu_gres("gpu:h100:8") == std::pair<std::string, int>{"h100", 8});
    CHECK(gpu_gres("gpu:h100:8(S:0-1)") == std::pair<std::string, int>{"h100", 8});
    CHECK(gpu_gres("gpu:4") == std::pair<std::string, int>{"", 4});
    CHECK(gpu_gres("mps:100,gpu:a100:2") == std::pair<std::string, int>{"a100", 2});
    CHECK(gpu_gres("").second == 0);
    CHECK(gpu_gres("(null)").second == 0);
}

TEST_CASE("partitions become pools with free and total GPUs and node states") {
    SlurmPartition gpu;
    gpu.name = "gpu";
    gpu.nodes = {"gpu1", "gpu2", "gpu3"};
    gpu.max_time_minutes = 2880;
    SlurmPartition cpu;
    cpu.name = "cpu";
    cpu.nodes = {"cpu1"};
    const std::vector<SlurmNode> nodes{
        node("gpu1", "idle", 8, 0, "gpu:h100:8", "gpu:h100:0(IDX:N/A)"),
        node("gpu2", "mixed", 8, 2, "gpu:h100:8", "gpu:h100:2(IDX:0-1)"),
        node("gpu3", "down", 8, 0, "gpu:h100:8", "gpu:h100:0"),
        node("cpu1", "allocated", 4, 4, "", ""),
    };
    auto inv = build_inventory("lab", {gpu, cpu}, nodes);
    CHECK(inv.name == "lab");
    CHECK(inv.kind == BackendKind::slurm);
    REQUIRE(inv.pools.size() == 2);
    const Pool& g = inv.pools[0];
    CHECK(g.accelerator == "h100");
    CHECK(g.gpus_per_node == 8);
    CHECK(g.gpus_total == 24);
    CHECK(g.gpus_free == 14); // gpu1: 8, gpu2: 6, gpu3 is down
    CHECK(g.nodes_total == 3);
    CHECK(g.nodes_free == 1);
    CHECK(g.max_time_minutes == 2880);
    CHECK(g.node_states == std::vector<std::string>{"down:1", "idle:1", "mixed:1"});
    const Pool& c = inv.pools[1];
    CHECK(c.accelerator.empty());
    CHECK(c.nodes_free == 0);
    CHECK_FALSE(c.max_time_minutes);
}
