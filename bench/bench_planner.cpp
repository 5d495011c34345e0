// plan() against large inventories. Target (issue #2): 1,000 pools in at most 10 ms.

#include <benchmark/benchmark.h>

#include "core/planner.hpp"

using namespace tandem;

namespace {

Inventory make_inventory(int pools) {
    static const char* types[] = {"H100", "A100", "A100-80GB", "L4", "V100", ""};
    Inventory inv;
    const int per_cluster = 50;
    for (int c = 0; c * per_cluster < pools; ++c) {
        ClusterInventory cluster;
        cluster.kind =
            c % 3 == 0 ? BackendKind::slurm : (c % 3 == 1 ? BackendKind::kubernetes : BackendKind::local);
        cluster.name =
            (cluster.kind == BackendKind::kubernetes ? "k8s/ctx-" : "cluster-") + std::to_string(c);
        for (int p = 0; p < per_cluster && c * per_cluster + p < pools; ++p) {
            Pool pool;
            pool.name = "pool-" + std::to_string(p);
            pool.accelerator = types[p % 6];
            pool.gpus_per_node = pool.accelerator.empty() ? 0 : 8;
            pool.nodes_total = 16;
            pool.nodes_free = p % 4;
            pool.gpus_total = pool.gpus_per_node * 16;
            pool.gpus_free = pool.gpus_per_node * (p % 4);
            pool.cpus_per_node = 96;
            pool.memory_gb_per_node = 1024;
            pool.max_time_minutes = 2 * 24 * 60;
            pool.time_sliced = p % 7 == 0;
            cluster.pools.push_back(std::move(pool));
        }
        inv.clusters.push_back(std::move(cluster));
    }
    return inv;
}

TaskSpec make_spec() {
    TaskSpec spec;
    spec.name = "train";
    spec.num_nodes = 2;
    spec.resources.accelerators = {{"H100", 8}, {"A100", 8}, {"A100-80GB", 8}};
    spec.resources.accelerators_ordered = false;
    spec.resources.cpus = Quantity{32, true};
    spec.resources.memory_gb = Quantity{256, false};
    spec.slurm.time = "1-00:00:00";
    spec.run = "python train.py";
    return spec;
}

void bm_plan(benchmark::State& state) {
    const Inventory inv = make_inventory(static_cast<int>(state.range(0)));
    const TaskSpec spec = make_spec();
    for (auto _ : state) {
        Plan p = plan(spec, inv);
        benchmark::DoNotOptimize(p);
    }
}

} // namespace

BENCHMARK(bm_plan)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
