// Planner rules about limits (time, nodes reachable), rejections, scores and scale.

#include <catch2/catch.hpp>

#include "planner_fixtures.hpp"

using namespace tandem;
using namespace planner_test;

TEST_CASE("planner: slurm time limit against the partition's maximum") {
    auto day = cpu_pool("day");
    day.max_time_minutes = 1440;
    auto week = cpu_pool("week");
    week.max_time_minutes = 7 * 1440;
    auto open = cpu_pool("open");
    auto k8s_pool = cpu_pool("nodes");
    k8s_pool.max_time_minutes = 60;
    Inventory inv{{cluster("slurm-a", BackendKind::slurm, {day, week, open}),
                   cluster("k8s/prod", BackendKind::kubernetes, {k8s_pool})}};
    auto spec = task();

    SECTION("too long for one partition") {
        // emplace, not `=`: GCC 12 at -O2 warns (falsely) maybe-uninitialized on optional<string> = literal.
        spec.slurm.time.emplace("2-00:00:00");
        const auto p = plan(spec, inv);
        CHECK(reason_of(p, "slurm-a", "day") == "time limit 2-00:00:00 exceeds partition limit 1-00:00:00");
        CHECK(placement_at(p, "slurm-a", "week") != nullptr);
        CHECK(placement_at(p, "slurm-a", "open") != nullptr);
        // config.slurm.time is addressed to slurm; kubernetes ignores it.
        CHECK(placement_at(p, "k8s/prod", "nodes") != nullptr);
    }
    SECTION("every slurm time form, at and just past the limit") {
        const std::vector<std::pair<std::string, int>> forms{
            {"90", 90},     {"45:00", 45},     {"90:30", 91},        {"01:30:00", 90}, {"1-0", 1440},
            {"1-02", 1560}, {"1-02:30", 1590}, {"1-02:30:01", 1591}, {"0:59", 1},      {"36:00:00", 2160}};
        for (const auto& [text, minutes] : forms) {
            auto at = cpu_pool("at");
            at.max_time_minutes = minutes;
            auto below = cpu_pool("below");
            below.max_time_minutes = minutes - 1;
            spec.slurm.time.emplace(text);
            const auto p = plan(spec, Inventory{{cluster("s", BackendKind::slurm, {at, below})}});
            INFO("time " << text);
            CHECK(ranked(p) == std::vector<std::string>{"s/at"});
            CHECK_THAT(reason_of(p, "s", "below"), Catch::StartsWith("time limit "));
        }
    }
    SECTION("unlimited and unparseable times are rejected on slurm pools with the reason") {
        // config.slurm.time must be a limit; without it, Slurm applies the partition's own.
        for (const std::string text : {"UNLIMITED", "infinite", "-1", "0", "abc", "", "1-", "-5", "1:2:3:4",
                                       "1-2-3", "1:xx", "2 hours"}) {
            spec.slurm.time.emplace(text);
            const auto p = plan(spec, inv);
            INFO("time '" << text << "'");
            CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/nodes"});
            const auto expected = parse_slurm_time_minutes(text);
            REQUIRE_FALSE(expected);
            CHECK(reason_of(p, "slurm-a", "open") == expected.error());
        }
    }
}

TEST_CASE("planner: an unreachable cluster is one rejection, not one per option") {
    auto down = cluster("slurm-down", BackendKind::slurm, {gpu_pool("gpu", "H100", 8, 2, 2)});
    down.reachable = false;
    down.error = "connection refused";
    Inventory inv{{down, cluster("k8s/prod", BackendKind::kubernetes, {gpu_pool("gpu", "H100", 8, 2, 2)})}};
    auto spec = task(with_accelerators({{"H100", 8}, {"H100", 4}}, false));
    REQUIRE(spec.options().size() == 2);

    const auto p = plan(spec, inv);
    int from_down = 0;
    for (const auto& r : p.rejections) {
        if (r.cluster == "slurm-down") {
            ++from_down;
            CHECK(r.pool.empty());
            CHECK(r.reason == "unreachable: connection refused");
        }
    }
    CHECK(from_down == 1);
    for (const auto& placement : p.placements) {
        CHECK(placement.cluster == "k8s/prod");
    }
    CHECK(p.placements.size() == 2);
}

TEST_CASE("planner: every (pool, option) pair is either placed or rejected with a specific reason") {
    Inventory inv{{cluster("slurm-a", BackendKind::slurm,
                           {gpu_pool("a100", "A100", 8, 2, 2), gpu_pool("h100x4", "H100", 4, 2, 2),
                            gpu_pool("h100", "H100", 8, 2, 2), gpu_pool("v100", "V100", 4, 8, 8)}),
                   cluster("k8s/prod", BackendKind::kubernetes, {cpu_pool("cpu", 10, 10)})}};
    auto spec = task(with_accelerators({{"H100", 8}, {"V100", 1}}, false));
    const auto options = spec.options();
    REQUIRE(options.size() == 2);
    const auto p = plan(spec, inv);

    for (const auto& c : inv.clusters) {
        for (const auto& pool : c.pools) {
            for (std::size_t i = 0; i < options.size(); ++i) {
                const auto placed =
                    std::count_if(p.placements.begin(), p.placements.end(), [&](const auto& x) {
                        return x.cluster == c.name && x.pool == pool.name &&
                               x.option_index == static_cast<int>(i);
                    });
                const auto rejected =
                    std::count_if(p.rejections.begin(), p.rejections.end(), [&](const auto& r) {
                        return r.cluster == c.name && r.pool == pool.name &&
                               r.option_label == options[i].label;
                    });
                INFO(c.name << "/" << pool.name << " option " << options[i].label);
                CHECK(placed + rejected == 1);
            }
        }
    }
    for (const auto& r : p.rejections) {
        CHECK_FALSE(r.reason.empty());
        CHECK_FALSE(r.option_label.empty());
        CHECK(r.reason.find('\n') == std::string::npos);
        CHECK_FALSE(std::isupper(static_cast<unsigned char>(r.reason.front())));
    }
    CHECK(ranked(p) == std::vector<std::string>{"slurm-a/h100", "slurm-a/v100"});

    auto reason_for = [&](const std::string& c, const std::string& pool, const std::string& label) {
        for (const auto& r : p.rejections) {
            if (r.cluster == c && r.pool == pool && r.option_label == label) {
                return r.reason;
            }
        }
        return std::string("(none)");
    };
    const auto& h100 = options[0].label;
    CHECK(reason_for("slurm-a", "a100", h100) == "needs H100, pool has A100");
    CHECK(reason_for("slurm-a", "h100x4", h100) == "needs H100:8 per node, pool has 4 per node");
    CHECK(reason_for("k8s/prod", "cpu", h100) == "needs H100:8, pool has no GPUs");
}

TEST_CASE("planner: accelerator names match exactly, ignoring case only") {
    Inventory inv{{cluster("slurm-a", BackendKind::slurm,
                           {gpu_pool("a100", "A100", 8, 1, 1), gpu_pool("a100-80", "A100-80GB", 8, 1, 1),
                            gpu_pool("h100", "H100", 8, 1, 1)})}};

    auto p = plan(task(with_accelerators({{"h100", 8}})), inv);
    CHECK(ranked(p) == std::vector<std::string>{"slurm-a/h100"});

    p = plan(task(with_accelerators({{"A100", 8}})), inv);
    CHECK(ranked(p) == std::vector<std::string>{"slurm-a/a100"});
    CHECK(reason_of(p, "slurm-a", "a100-80") == "needs A100, pool has A100-80GB");

    p = plan(task(with_accelerators({{"a100-80gb", 8}})), inv);
    CHECK(ranked(p) == std::vector<std::string>{"slurm-a/a100-80"});
    CHECK(reason_of(p, "slurm-a", "a100") == "needs a100-80gb, pool has A100");
}

TEST_CASE("planner: fields the backend kind cannot honour reject the whole cluster") {
    Inventory inv{{cluster("local", BackendKind::local, {cpu_pool("local")}),
                   cluster("slurm-a", BackendKind::slurm, {cpu_pool("cpu"), cpu_pool("cpu2")}),
                   cluster("k8s/prod", BackendKind::kubernetes, {cpu_pool("cpu")})}};
    Resources r;
    r.image_id.emplace("ubuntu:22.04");
    r.ports = {"8080"};
    const auto p = plan(task(r), inv);
    CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/cpu"});
    CHECK(reason_of(p, "slurm-a", "") ==
          "not supported on slurm: jobs run on the node's own OS (no container "
          "runtime); not supported on slurm: Opening ports is not supported in Slurm.");
    CHECK(rejections_of(p, "slurm-a", "cpu").empty());
    CHECK_THAT(reason_of(p, "local", ""), Catch::StartsWith("not supported on local: "));

    SECTION("use_spot runs nowhere") {
        r.use_spot = true;
        const auto none = plan(task(r), inv);
        CHECK(none.placements.empty());
        CHECK_THAT(reason_of(none, "k8s/prod", ""),
                   Catch::StartsWith("not supported on k8s: Spot instances are not supported"));
    }
}

TEST_CASE("planner: score breakdown") {
    SECTION("components add up and are named") {
        Pool pool = gpu_pool("gpu", "H100", 8, 2, 0);
        pool.gpus_free = 4; // spread over partly used nodes
        const auto p = plan(task(with_accelerators({{"H100", 2}})),
                            Inventory{{cluster("slurm-a", BackendKind::slurm, {pool})}});
        REQUIRE(p.placements.size() == 1);
        const auto& top = p.placements[0];
        std::vector<std::string> names;
        double sum = 0;
        for (const auto& part : top.breakdown) {
            names.push_back(part.name);
            sum += part.value;
        }
        CHECK(names == std::vector<std::string>{"starts_now", "backend_preference", "gpu_fit", "headroom"});
        CHECK(top.starts_now);
        CHECK(component(top, "starts_now") == 100);
        CHECK(component(top, "backend_preference") == 30);
        CHECK(component(top, "gpu_fit") == Approx(-15)); // 6 of 8 GPUs per node unused
        CHECK(component(top, "headroom") == 0);          // only counts while waiting
        CHECK(top.score == Approx(sum));
        CHECK(top.score == Approx(115));
        CHECK(top.kind == BackendKind::slurm);
    }
    SECTION("a task that takes whole nodes needs idle nodes, not scattered free GPUs") {
        Pool pool = gpu_pool("gpu", "H100", 8, 2, 0);
        pool.gpus_free = 8; // 4 + 4 on two busy nodes
        const auto p = plan(task(with_accelerators({{"H100", 8}})),
                            Inventory{{cluster("slurm-a", BackendKind::slurm, {pool})}});
        REQUIRE(p.placements.size() == 1);
        CHECK_FALSE(p.placements[0].starts_now);
        CHECK(component(p.placements[0], "starts_now") == 0);
    }
    SECTION("a multi-node task needs free GPUs for every node") {
        Pool pool = gpu_pool("gpu", "H100", 8, 4, 0);
        auto spec = task(with_accelerators({{"H100", 2}}));
        spec.num_nodes = 2;
        pool.gpus_free = 2; // enough for one node's share only
        auto p = plan(spec, Inventory{{cluster("slurm-a", BackendKind::slurm, {pool})}});
        REQUIRE(p.placements.size() == 1);
        CHECK_FALSE(p.placements[0].starts_now);
        pool.gpus_free = 4;
        p = plan(spec, Inventory{{cluster("slurm-a", BackendKind::slurm, {pool})}});
        REQUIRE(p.placements.size() == 1);
        CHECK(p.placements[0].starts_now);
    }
    SECTION("a GPU pool is a poor home for a CPU task") {
        const auto p =
            plan(task(), Inventory{{cluster("slurm-a", BackendKind::slurm,
                                            {gpu_pool("gpu", "H100", 8, 2, 2), cpu_pool("cpu", 2, 2)})}});
        CHECK(ranked(p) == std::vector<std::string>{"slurm-a/cpu", "slurm-a/gpu"});
        CHECK(component(p.placements[1], "gpu_fit") == -20);
        CHECK(component(p.placements[0], "gpu_fit") == 0);
    }
    SECTION("the pool whose nodes fit the GPU count best wins") {
        const auto p = plan(
            task(with_accelerators({{"H100", 2}})),
            Inventory{{cluster("slurm-a", BackendKind::slurm,
                               {gpu_pool("a-eight", "H100", 8, 2, 2), gpu_pool("b-two", "H100", 2, 2, 2)})}});
        CHECK(ranked(p) == std::vector<std::string>{"slurm-a/b-two", "slurm-a/a-eight"});
    }
    SECTION("starting now outweighs backend preference") {
        const auto p = plan(
            task(with_accelerators({{"H100", 8}})),
            Inventory{{cluster("slurm-a", BackendKind::slurm, {gpu_pool("gpu", "H100", 8, 2, 0)}),
                       cluster("k8s/prod", BackendKind::kubernetes, {gpu_pool("gpu", "H100", 8, 2, 1)})}});
        CHECK(ranked(p) == std::vector<std::string>{"k8s/prod/gpu", "slurm-a/gpu"});
    }
    SECTION("the policy lists decide between otherwise equal backends") {
        Inventory inv{{cluster("k8s/prod", BackendKind::kubernetes, {gpu_pool("gpu", "H100", 8, 2, 2)}),
                       cluster("slurm-a", BackendKind::slurm, {gpu_pool("gpu", "H100", 8, 2, 2)})}};
        const auto spec = task(with_accelerators({{"H100", 8}}));
        CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"slurm-a/gpu", "k8s/prod/gpu"});
        PlannerPolicy k8s_first;
        k8s_first.prefer_default = {BackendKind::kubernetes, BackendKind::slurm, BackendKind::local};
        CHECK(ranked(plan(spec, inv, k8s_first)) == std::vector<std::string>{"k8s/prod/gpu", "slurm-a/gpu"});
        // prefer_default does not govern multi-node work.
        auto multi = spec;
        multi.num_nodes = 2;
        CHECK(ranked(plan(multi, inv, k8s_first)) == std::vector<std::string>{"slurm-a/gpu", "k8s/prod/gpu"});
    }
    SECTION("while waiting, the pool with more free capacity ranks first") {
        Pool busy = gpu_pool("a-busy", "H100", 8, 4, 0);
        Pool emptier = gpu_pool("b-emptier", "H100", 8, 4, 0);
        emptier.gpus_free = 6;
        const auto p = plan(task(with_accelerators({{"H100", 8}})),
                            Inventory{{cluster("slurm-a", BackendKind::slurm, {busy, emptier})}});
        CHECK(ranked(p) == std::vector<std::string>{"slurm-a/b-emptier", "slurm-a/a-busy"});
        CHECK(component(p.placements[0], "headroom") == Approx(10.0 * 6 / 32));
    }
}

TEST_CASE("planner: output is deterministic and independent of inventory order") {
    // Four identical pools: only names can break the tie.
    auto make = [](bool reversed) {
        std::vector<ClusterInventory> clusters{
            cluster("b-cluster", BackendKind::slurm,
                    {gpu_pool("y", "H100", 8, 2, 2), gpu_pool("x", "H100", 8, 2, 2)}),
            cluster("a-cluster", BackendKind::slurm,
                    {gpu_pool("y", "H100", 8, 2, 2), gpu_pool("x", "H100", 8, 2, 2)})};
        if (reversed) {
            std::reverse(clusters.begin(), clusters.end());
            for (auto& c : clusters) {
                std::reverse(c.pools.begin(), c.pools.end());
            }
        }
        return Inventory{clusters};
    };
    const auto spec = task(with_accelerators({{"H100", 8}}));
    const auto first = plan(spec, make(false));
    const std::vector<std::string> expected{"a-cluster/x", "a-cluster/y", "b-cluster/x", "b-cluster/y"};
    CHECK(ranked(first) == expected);
    CHECK(ranked(plan(spec, make(false))) == expected);
    CHECK(ranked(plan(spec, make(true))) == expected);
}

TEST_CASE("planner: a thousand pools plan correctly") {
    ClusterInventory big = cluster("slurm-big", BackendKind::slurm, {});
    for (int i = 0; i < 1000; ++i) {
        const char* type = i % 3 == 0 ? "H100" : i % 3 == 1 ? "A100" : "";
        Pool pool = type[0] != '\0' ? gpu_pool(fmt::format("p{:04}", i), type, 8, 2, 0)
                                    : cpu_pool(fmt::format("p{:04}", i), 2, 2);
        big.pools.push_back(pool);
    }
    big.pools[501] = gpu_pool("p0501", "H100", 8, 2, 2); // the only GPU pool with idle nodes
    const auto spec = task(with_accelerators({{"H100", 8}, {"A100", 8}}, false));
    const auto p = plan(spec, Inventory{{big}});

    // 334 H100 pools take the H100 option, 333 A100 pools the A100 option; every other pair is rejected.
    CHECK(p.placements.size() == 667);
    CHECK(p.rejections.size() == 2000 - 667);
    REQUIRE_FALSE(p.placements.empty());
    CHECK(p.placements[0].pool == "p0501");
    CHECK(p.placements[0].starts_now);
    for (std::size_t i = 1; i < p.placements.size(); ++i) {
        CHECK_FALSE(p.placements[i].starts_now);
        CHECK(p.placements[i - 1].score >= p.placements[i].score);
    }
}

TEST_CASE("planner: config.slurm.partition pins Slurm pools and is ignored elsewhere") {
    auto spec = task();
    spec.slurm.partition.emplace("cpu");
    Inventory inv{{cluster("s", BackendKind::slurm, {cpu_pool("cpu"), cpu_pool("gpu")}),
                   cluster("k8s/prod", BackendKind::kubernetes, {cpu_pool("nodes")})}};
    const auto p = plan(spec, inv);
    CHECK(placement_at(p, "s", "cpu") != nullptr);
    CHECK(placement_at(p, "s", "gpu") == nullptr);
    CHECK(reason_of(p, "s", "gpu") == "config.slurm.partition is cpu");
    CHECK(placement_at(p, "k8s/prod", "nodes") != nullptr);
}

TEST_CASE("planner: sbatch_options rule out a Slurm cluster reached over slurmrestd, not one over ssh") {
    auto rest = cluster("rest", BackendKind::slurm, {cpu_pool("cpu")});
    rest.sbatch_options = false;
    auto ssh = cluster("ssh", BackendKind::slurm, {cpu_pool("cpu")});
    auto spec = task();
    const Inventory inv{{rest, ssh}};
    CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"rest/cpu", "ssh/cpu"});
    spec.slurm.sbatch_options = {{"exclusive", ""}};
    const auto p = plan(spec, inv);
    CHECK(ranked(p) == std::vector<std::string>{"ssh/cpu"});
    CHECK_THAT(reason_of(p, "rest", ""), Catch::StartsWith("config.slurm.sbatch_options.exclusive: the cluster is "
                                                           "reached over slurmrestd"));
}

TEST_CASE("planner: the default partition wins a tie, and cpu_partition takes tasks without GPUs") {
    auto a = cpu_pool("a");
    auto b = cpu_pool("b");
    b.is_default = true;
    const Inventory inv{{cluster("s", BackendKind::slurm, {a, b})}};
    auto spec = task();
    CHECK(ranked(plan(spec, inv)) == std::vector<std::string>{"s/b", "s/a"});
    spec.slurm.cpu_partition = "a";
    const auto p = plan(spec, inv);
    CHECK(ranked(p) == std::vector<std::string>{"s/a"});
    CHECK(reason_of(p, "s", "b") == "config.slurm.cpu_partition is a");
}
