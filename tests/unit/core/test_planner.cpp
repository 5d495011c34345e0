#include <catch2/catch.hpp>

#include "planner_fixtures.hpp"

using namespace tandem;
using namespace planner_test;

TEST_CASE("planner: infra pin by kind keeps only clusters of that kind") {
    Inventory inv{{cluster("local", BackendKind::local, {cpu_pool("local")}),
                   cluster("slurm-a", BackendKind::slurm, {cpu_pool("cpu")}),
                   cluster("k8s/prod", BackendKind::kubernetes, {cpu_pool("cpu-nodes")})}};
    auto spec = task();

    SECTION("unpinned, every cluster is a candidate") {
        CHECK(plan(spec, inv).placements.size() == 3);
    }
    SECTION("pinned to slurm") {
        spec.resources.infra = pin("slurm");
        const auto p = plan(spec, inv);
        CHECK(ranked(p) == std::vector<std::string>{"slurm-a/cpu"});
        CHECK(reason_of(p, "local", "") == "infra pinned to slurm");
        CHECK(reason_of(p, "k8s/prod", "") == "infra pinned to slurm");
    }
    SECTION("pinned to k8s") {
        spec.resources.infra = pin("k8s");
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"k8s/prod/cpu-nodes"});
    }
    SECTION("the kubernetes spelling of the kind is accepted") {
        spec.resources.infra = pin("kubernetes");
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"k8s/prod/cpu-nodes"});
    }
    SECTION("pinned to local") {
        spec.resources.infra = pin("local");
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"local/local"});
    }
}

TEST_CASE("planner: infra pin by cluster name") {
    Inventory inv{{cluster("slurm-a", BackendKind::slurm, {cpu_pool("cpu")}),
                   cluster("slurm-b", BackendKind::slurm, {cpu_pool("cpu")}),
                   cluster("k8s/prod", BackendKind::kubernetes, {cpu_pool("cpu")}),
                   cluster("k8s/dev", BackendKind::kubernetes, {cpu_pool("cpu")})}};
    auto spec = task();

    SECTION("a slurm cluster by its name") {
        spec.resources.infra = pin("slurm", "slurm-b");
        const auto p = plan(spec, inv);
        CHECK(ranked(p) == std::vector<std::string>{"slurm-b/cpu"});
        CHECK(reason_of(p, "slurm-a", "") == "infra pinned to slurm/slurm-b");
        CHECK(reason_of(p, "k8s/dev", "") == "infra pinned to slurm/slurm-b");
    }
    SECTION("a kubernetes cluster by its context") {
        spec.resources.infra = pin("k8s", "prod");
        const auto p = plan(spec, inv);
        CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/cpu"});
        CHECK(reason_of(p, "k8s/dev", "") == "infra pinned to k8s/prod");
    }
    SECTION("a kubernetes cluster by its full configured name") {
        spec.resources.infra = pin("k8s", "k8s/prod");
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"k8s/prod/cpu"});
    }
    SECTION("the context shortcut does not apply to other kinds") {
        Inventory odd{{cluster("k8s/prod", BackendKind::slurm, {cpu_pool("cpu")})}};
        spec.resources.infra = pin("slurm", "prod");
        const auto p = plan(spec, odd);
        CHECK(p.placements.empty());
        CHECK(reason_of(p, "k8s/prod", "") == "infra pinned to slurm/prod");
    }
}

TEST_CASE("planner: infra pin by pool keeps only that pool, and says so for the others") {
    Inventory inv{
        {cluster("slurm-a", BackendKind::slurm, {cpu_pool("cpu"), gpu_pool("gpu", "H100", 8, 2, 2)}),
         cluster("slurm-b", BackendKind::slurm, {gpu_pool("gpu", "H100", 8, 2, 2)})}};
    auto spec = task();
    spec.resources.infra = pin("slurm", "slurm-a", "gpu");
    const auto p = plan(spec, inv);
    CHECK(ranked(p) == std::vector<std::string>{"slurm-a/gpu"});
    CHECK(reason_of(p, "slurm-a", "cpu") == "infra pinned to slurm/slurm-a/gpu");
    CHECK(reason_of(p, "slurm-b", "") == "infra pinned to slurm/slurm-a/gpu");
}

TEST_CASE("planner: ordered alternatives take the first viable tier even when a later one scores higher") {
    // H100 waits in a queue; A100 could start right now and would score higher. The A100 cluster is listed
    // first so that inventory order cannot pass for tier order.
    Inventory inv{{cluster("k8s/prod", BackendKind::kubernetes, {gpu_pool("a100", "A100", 8, 2, 2)}),
                   cluster("slurm-a", BackendKind::slurm, {gpu_pool("h100", "H100", 8, 2, 0)})}};

    SECTION("ordered resource sets") {
        auto spec = task();
        spec.alternatives = {with_accelerators({{"H100", 8}}), with_accelerators({{"A100", 8}})};
        spec.alternatives_ordered = true;
        const auto p = plan(spec, inv);
        REQUIRE(p.placements.size() == 2);
        CHECK(ranked(p) == std::vector<std::string>{"slurm-a/h100", "k8s/prod/a100"});
        CHECK(p.placements[0].option_index == 0);
        CHECK(p.placements[0].tier < p.placements[1].tier);
        CHECK_FALSE(p.placements[0].starts_now);
        CHECK(p.placements[1].starts_now);
        CHECK(p.placements[1].score > p.placements[0].score);
    }
    SECTION("an ordered accelerator list") {
        auto spec = task(with_accelerators({{"H100", 8}, {"A100", 8}}, true));
        const auto p = plan(spec, inv);
        CHECK(ranked(p) == std::vector<std::string>{"slurm-a/h100", "k8s/prod/a100"});
        CHECK(p.placements[1].score > p.placements[0].score);
    }
    SECTION("when the first tier fits nowhere, the next one wins") {
        inv.clusters[1].pools[0].gpus_per_node = 4; // H100:8 no longer fits
        auto spec = task();
        spec.alternatives = {with_accelerators({{"H100", 8}}), with_accelerators({{"A100", 8}})};
        spec.alternatives_ordered = true;
        const auto p = plan(spec, inv);
        CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/a100"});
        CHECK(p.placements[0].option_index == 1);
        const auto turned_down = rejections_of(p, "slurm-a", "h100");
        REQUIRE(turned_down.size() == 2); // once per option
        CHECK(turned_down[0].reason == "needs H100:8 per node, pool has 4 per node");
        CHECK(turned_down[1].reason == "needs A100, pool has H100");
    }
}

TEST_CASE("planner: any_of alternatives and accelerator sets compete on score") {
    Inventory inv{{cluster("slurm-a", BackendKind::slurm, {gpu_pool("h100", "H100", 8, 2, 0)}),
                   cluster("k8s/prod", BackendKind::kubernetes, {gpu_pool("a100", "A100", 8, 2, 2)})}};

    SECTION("any_of resource sets: the one that starts now wins though listed second") {
        auto spec = task();
        spec.alternatives = {with_accelerators({{"H100", 8}}), with_accelerators({{"A100", 8}})};
        spec.alternatives_ordered = false;
        const auto p = plan(spec, inv);
        CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/a100", "slurm-a/h100"});
        CHECK(p.placements[0].tier == p.placements[1].tier);
        CHECK(p.placements[0].option_index == 1);
    }
    SECTION("an accelerator set") {
        auto spec = task(with_accelerators({{"H100", 8}, {"A100", 8}}, false));
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"k8s/prod/a100", "slurm-a/h100"});
    }
    SECTION("swapping which pool is free swaps the winner") {
        inv.clusters[0].pools[0] = gpu_pool("h100", "H100", 8, 2, 2);
        inv.clusters[1].pools[0] = gpu_pool("a100", "A100", 8, 2, 0);
        auto spec = task(with_accelerators({{"H100", 8}, {"A100", 8}}, false));
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"slurm-a/h100", "k8s/prod/a100"});
    }
}

TEST_CASE("planner: num_nodes needs that many nodes in the pool, and not the local backend") {
    Inventory inv{{cluster("local", BackendKind::local, {cpu_pool("local")}),
                   cluster("slurm-a", BackendKind::slurm, {cpu_pool("small", 1, 1), cpu_pool("big", 4, 1)}),
                   cluster("k8s/prod", BackendKind::kubernetes, {cpu_pool("nodes", 4, 2)})}};
    auto spec = task();
    spec.num_nodes = 2;
    const auto p = plan(spec, inv);
    CHECK(reason_of(p, "slurm-a", "small") == "needs 2 nodes, pool has 1");
    CHECK(reason_of(p, "local", "") == "not supported on local: local runs one node");
    REQUIRE(p.placements.size() == 2);

    // Only one of slurm-a/big's four nodes is idle, so two nodes cannot start now; k8s has two idle.
    const auto* big = placement_at(p, "slurm-a", "big");
    const auto* k8s = placement_at(p, "k8s/prod", "nodes");
    REQUIRE(big != nullptr);
    REQUIRE(k8s != nullptr);
    CHECK_FALSE(big->starts_now);
    CHECK(k8s->starts_now);
    // Multi-node work prefers slurm by default.
    CHECK(component(*big, "backend_preference") > component(*k8s, "backend_preference"));

    SECTION("one node fits everywhere") {
        spec.num_nodes = 1;
        CHECK(plan(spec, inv).placements.size() == 4);
    }
}

TEST_CASE("planner: Kubernetes ranks are pods, so several may share one node if the GPUs add up") {
    Inventory inv{{cluster("k8s/lab", BackendKind::kubernetes,
                           {cpu_pool("cpu", 1, 1), gpu_pool("h100", "H100", 8, 1, 1)})}};
    auto spec = task();
    spec.num_nodes = 2;
    auto p = plan(spec, inv);
    CHECK(placement_at(p, "k8s/lab", "cpu") != nullptr);
    auto gpu = task(with_accelerators({{"H100", 4}}));
    gpu.num_nodes = 2;
    CHECK(placement_at(plan(gpu, inv), "k8s/lab", "h100") != nullptr);
    gpu.resources.accelerators = {{"H100", 8}};
    CHECK(reason_of(plan(gpu, inv), "k8s/lab", "h100") == "needs 16 GPUs for 2 pods, pool has 8");
}

TEST_CASE("planner: fractional GPUs need a MIG or time-sliced pool") {
    Pool plain = gpu_pool("a100", "A100", 8, 2, 2);
    Pool mig = gpu_pool("a100-mig", "A100", 8, 2, 2);
    mig.mig_profiles = {"1g.10gb", "3g.40gb"};
    mig.shared_total = mig.shared_free = 14;
    Pool shared = gpu_pool("a100-shared", "A100", 8, 2, 2);
    shared.time_sliced = true;
    shared.shared_total = shared.shared_free = 32;
    Inventory inv{{cluster("k8s/prod", BackendKind::kubernetes, {plain, mig, shared}),
                   cluster("slurm-a", BackendKind::slurm, {mig})}};
    auto spec = task(with_accelerators({{"A100", 0.4}}));
    const auto p = plan(spec, inv);

    CHECK(reason_of(p, "k8s/prod", "a100") == "fractional A100:0.4 needs MIG or time-sliced GPUs");
    CHECK_THAT(reason_of(p, "slurm-a", ""),
               Catch::StartsWith("not supported on slurm: fractional GPUs need MIG or time-sliced GPUs"));
    CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/a100-mig", "k8s/prod/a100-shared"});
    for (const auto& placement : p.placements) {
        CHECK(placement.starts_now);
        CHECK(component(placement, "gpu_fit") == 0);             // a slice wastes no whole GPUs
        CHECK(component(placement, "backend_preference") == 30); // shared work prefers k8s
    }

    // Half a GPU is more than 3 of 7 slices: only the time-sliced pool can take it.
    const auto half = plan(task(with_accelerators({{"A100", 0.5}})), inv);
    CHECK(reason_of(half, "k8s/prod", "a100-mig") == "needs 0.5 of a GPU, largest MIG slice here is 3g.40gb");
    CHECK(ranked(half) == std::vector<std::string>{"k8s/prod/a100-shared"});

    // Every slice taken: still feasible, but it would wait.
    mig.shared_free = 0;
    const auto busy = plan(spec, Inventory{{cluster("k8s/prod", BackendKind::kubernetes, {mig})}});
    REQUIRE(busy.placements.size() == 1);
    CHECK_FALSE(busy.placements.front().starts_now);
}

TEST_CASE("planner: a pool whose GPUs are all MIG slices serves fractions, not whole GPUs") {
    Pool sliced = gpu_pool("NVIDIA-A100-SXM4-80GB", "A100-80GB", 0, 1, 0);
    sliced.mig_profiles = {"1g.10gb"};
    Inventory inv{{cluster("k8s/lab", BackendKind::kubernetes, {sliced})}};
    const auto fraction = plan(task(with_accelerators({{"A100-80GB", 0.1}})), inv);
    CHECK(ranked(fraction) == std::vector<std::string>{"k8s/lab/NVIDIA-A100-SXM4-80GB"});
    const auto whole = plan(task(with_accelerators({{"A100-80GB", 1}})), inv);
    CHECK(whole.placements.empty());
    CHECK(reason_of(whole, "k8s/lab", "NVIDIA-A100-SXM4-80GB") == "needs A100-80GB:1, pool has no GPUs");

    // A CPU task goes to CPU nodes before MIG-sliced GPU nodes.
    Inventory both{{cluster("k8s/lab", BackendKind::kubernetes, {sliced, cpu_pool("cpu", 1, 1)})}};
    const auto cpu = plan(task(with_accelerators({})), both);
    CHECK(ranked(cpu).front() == "k8s/lab/cpu");
}

TEST_CASE("planner: cpus and memory are per-node minimums, unknown pool values pass") {
    auto small = cpu_pool("small");
    small.cpus_per_node = 8;
    small.memory_gb_per_node = 128;
    auto lowmem = cpu_pool("lowmem");
    lowmem.cpus_per_node = 32;
    lowmem.memory_gb_per_node = 32;
    auto exact = cpu_pool("exact");
    exact.cpus_per_node = 16;
    exact.memory_gb_per_node = 64;
    auto unknown = cpu_pool("unknown"); // reports 0 for both
    Inventory inv{{cluster("slurm-a", BackendKind::slurm, {small, lowmem, exact, unknown})}};

    Resources r;
    r.cpus = Quantity{16, true};
    r.memory_gb = Quantity{64, false};
    const auto p = plan(task(r), inv);
    CHECK(reason_of(p, "slurm-a", "small") == "needs 16 cpus per node, pool has 8");
    CHECK(reason_of(p, "slurm-a", "lowmem") == "needs 64 GB memory per node, pool has 32 GB");
    CHECK(ranked(p) == std::vector<std::string>{"slurm-a/exact", "slurm-a/unknown"});

    SECTION("an exact count is still only a minimum for feasibility") {
        r.cpus = Quantity{4, false};
        r.memory_gb = Quantity{16, false};
        CHECK(plan(task(r), inv).placements.size() == 4);
    }
}
