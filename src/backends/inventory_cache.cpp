#include "backends/inventory_cache.hpp"

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "sys/clock.hpp"

namespace tandem::backends {

namespace {

using sys::now_seconds;

} // namespace

std::optional<ClusterInventory> read_inventory_cache(const std::string& file, const std::string& source,
                                                     const std::string& cluster, BackendKind kind,
                                                     std::chrono::seconds max_age) {
    std::ifstream in(file);
    if (!in) {
        return std::nullopt;
    }
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || j.value("source", "") != source ||
        now_seconds() - j.value("at", std::int64_t{0}) > max_age.count() || !j.contains("pools") ||
        !j["pools"].is_array()) {
        return std::nullopt;
    }
    ClusterInventory inv;
    inv.name = cluster;
    inv.kind = kind;
    for (const auto& pj : j["pools"]) {
        auto pool = pool_from_json(pj);
        if (!pool) {
            return std::nullopt;
        }
        inv.pools.push_back(std::move(*pool));
    }
    return inv;
}

void write_inventory_cache(const std::string& file, const std::string& source, const ClusterInventory& inv) {
    nlohmann::json pools = nlohmann::json::array();
    for (const auto& p : inv.pools) {
        pools.push_back(to_json(p));
    }
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
    const std::string tmp = file + ".tmp" + std::to_string(::getpid());
    std::ofstream(tmp) << nlohmann::json{{"source", source}, {"at", now_seconds()}, {"pools", pools}};
    std::filesystem::rename(tmp, file, ec);
}

} // namespace tandem::backends
