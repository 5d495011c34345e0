#include "core/inventory.hpp"

#include <cstdio>

#include "core/backend_traits.hpp"

namespace tandem {

std::string_view to_string(BackendKind kind) {
    return traits_of(kind).name;
}

std::optional<BackendKind> backend_kind_from_string(std::string_view text) {
    const auto* t = find_backend_traits(text);
    return t == nullptr ? std::nullopt : std::optional<BackendKind>(t->kind);
}

std::optional<std::string> mig_profile_for(double fraction, const std::vector<std::string>& profiles) {
    std::optional<std::pair<int, std::string>> best;
    for (const auto& profile : profiles) {
        int slices = 0;
        if (std::sscanf(profile.c_str(), "%dg", &slices) != 1 || slices <= 0) {
            continue;
        }
        if (slices / 7.0 + 1e-9 >= fraction && (!best || slices < best->first)) {
            best = std::make_pair(slices, profile);
        }
    }
    return best ? std::optional<std::string>(best->second) : std::nullopt;
}

nlohmann::json to_json(const Pool& p) {
    return nlohmann::json{{"name", p.name},
                          {"accelerator", p.accelerator},
                          {"gpus_per_node", p.gpus_per_node},
                          {"gpus_free", p.gpus_free},
                          {"gpus_total", p.gpus_total},
                          {"nodes_free", p.nodes_free},
                          {"nodes_total", p.nodes_total},
                          {"cpus_per_node", p.cpus_per_node},
                          {"memory_gb_per_node", p.memory_gb_per_node},
                          {"max_time_minutes", p.max_time_minutes ? nlohmann::json(*p.max_time_minutes)
                                                                  : nlohmann::json(nullptr)},
                          {"default_time_minutes", p.default_time_minutes
                                                       ? nlohmann::json(*p.default_time_minutes)
                                                       : nlohmann::json(nullptr)},
                          {"is_default", p.is_default},
                          {"mig_profiles", p.mig_profiles},
                          {"time_sliced", p.time_sliced},
                          {"shared_free", p.shared_free},
                          {"shared_total", p.shared_total},
                          {"node_states", p.node_states}};
}

std::optional<Pool> pool_from_json(const nlohmann::json& j) {
    try {
        Pool p;
        p.name = j.at("name").get<std::string>();
        p.accelerator = j.at("accelerator").get<std::string>();
        p.gpus_per_node = j.at("gpus_per_node").get<int>();
        p.gpus_free = j.at("gpus_free").get<int>();
        p.gpus_total = j.at("gpus_total").get<int>();
        p.nodes_free = j.at("nodes_free").get<int>();
        p.nodes_total = j.at("nodes_total").get<int>();
        p.cpus_per_node = j.at("cpus_per_node").get<int>();
        p.memory_gb_per_node = j.at("memory_gb_per_node").get<double>();
        if (!j.at("max_time_minutes").is_null()) {
            p.max_time_minutes = j.at("max_time_minutes").get<int>();
        }
        if (auto d = j.find("default_time_minutes"); d != j.end() && !d->is_null()) {
            p.default_time_minutes = d->get<int>(); // absent in caches written before it existed
        }
        p.is_default = j.value("is_default", false);
        p.mig_profiles = j.at("mig_profiles").get<std::vector<std::string>>();
        p.time_sliced = j.at("time_sliced").get<bool>();
        p.shared_free = j.value("shared_free", 0); // absent in caches written before they existed
        p.shared_total = j.value("shared_total", 0);
        p.node_states = j.at("node_states").get<std::vector<std::string>>();
        return p;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt; // a cache from another version: ignore it
    }
}

const Pool* find_pool(const ClusterInventory& inventory, std::string_view name) {
    for (const auto& p : inventory.pools) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

} // namespace tandem
