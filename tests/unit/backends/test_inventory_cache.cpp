// The inventory cache every remote backend keeps in STATE/cache for launch's 30 s planning view.

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "backends/inventory_cache.hpp"

using namespace tandem;
using namespace tandem::backends;

TEST_CASE("inventory cache: a view is read back only from its own source and while young enough") {
    const auto dir = std::filesystem::temp_directory_path() / ("tandem-inv-" + std::to_string(::getpid()));
    const std::string file = (dir / "cache" / "inv.json").string();
    ClusterInventory inv;
    inv.name = "lab";
    inv.kind = BackendKind::slurm;
    Pool gpu;
    gpu.name = "gpu";
    gpu.accelerator = "H100";
    gpu.gpus_per_node = 8;
    gpu.nodes_total = 2;
    gpu.max_time_minutes = 60;
    inv.pools = {gpu};
    write_inventory_cache(file, "http://a:6820", inv); // makes the folder

    auto back =
        read_inventory_cache(file, "http://a:6820", "lab", BackendKind::slurm, std::chrono::seconds(30));
    REQUIRE(back);
    CHECK(back->name == "lab");
    CHECK(back->kind == BackendKind::slurm);
    REQUIRE(back->pools.size() == 1);
    CHECK(back->pools[0].name == "gpu");
    CHECK(back->pools[0].accelerator == "H100");
    CHECK(back->pools[0].gpus_per_node == 8);
    CHECK(back->pools[0].max_time_minutes == 60);

    CHECK_FALSE(
        read_inventory_cache(file, "http://b:6820", "lab", BackendKind::slurm, std::chrono::seconds(30)));
    CHECK_FALSE(
        read_inventory_cache(file, "http://a:6820", "lab", BackendKind::slurm, std::chrono::seconds(-1)));
    CHECK_FALSE(read_inventory_cache((dir / "missing.json").string(), "http://a:6820", "lab",
                                     BackendKind::slurm, std::chrono::seconds(30)));
    std::ofstream(file) << "{\"source\": \"http://a:6820\", \"at\": 9999999999, \"pools\": [{\"name\": 3}]}";
    CHECK_FALSE(
        read_inventory_cache(file, "http://a:6820", "lab", BackendKind::slurm, std::chrono::seconds(30)));
    std::ofstream(file) << "not json";
    CHECK_FALSE(
        read_inventory_cache(file, "http://a:6820", "lab", BackendKind::slurm, std::chrono::seconds(30)));
    std::filesystem::remove_all(dir);
}
