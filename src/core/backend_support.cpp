// Which spec fields each backend kind honours, ignores or refuses. Each kind's column is in its row of
// backend_traits.cpp; this file holds what the cells refer to: the conditions on a task, by the field
// they read. A field a backend cannot honour is an error with a precise reason, never silently dropped: a
// user who asks for spot capacity or a container image and silently gets neither would find out only
// after the job ran in the wrong place.
//
// Backend-specific settings (`config.slurm.*`, `config.kubernetes.*`) are deliberately absent: they are
// addressed to one backend and simply do not apply to the others, so one task file can carry both.

#include "core/backend_support.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "core/backend_traits.hpp"

namespace tandem {

namespace {

std::string hint_text(const Resources& r, const char* key) {
    auto it = r.hints.find(key);
    if (it == r.hints.end()) {
        return {};
    }
    std::string text = it->second.is_string() ? it->second.get<std::string>() : it->second.dump();
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

bool has_hint(const Resources& r, const char* key) {
    return r.hints.count(key) > 0;
}

bool uses_spot(const TaskSpec&, const Resources& r) {
    return r.use_spot.value_or(false);
}
bool has_image(const TaskSpec&, const Resources& r) {
    return r.image_id.has_value();
}
bool has_ports(const TaskSpec&, const Resources& r) {
    return !r.ports.empty();
}
bool has_labels(const TaskSpec&, const Resources& r) {
    return !r.labels.empty();
}
bool has_disk_size(const TaskSpec&, const Resources& r) {
    return r.disk_size_gb.has_value();
}
bool is_multi_node(const TaskSpec& spec, const Resources&) {
    return spec.num_nodes > 1;
}
// A local source is a path; `s3://...` and storage objects ({source, name, store, mode}) are not.
bool is_local_source(const nlohmann::json& v) {
    return v.is_string() && v.get<std::string>().find("://") == std::string::npos;
}
bool has_file_mounts(const TaskSpec& spec, const Resources&) {
    return std::any_of(spec.file_mounts.begin(), spec.file_mounts.end(),
                       [](const auto& m) { return is_local_source(m.second); });
}
bool wants_fractional_gpu(const TaskSpec&, const Resources& r) {
    return std::any_of(r.accelerators.begin(), r.accelerators.end(),
                       [](const Accelerator& a) { return a.fractional(); });
}
// SkyPilot: None and `best` need no feature; any other tier needs CUSTOM_DISK_TIER.
bool custom_disk_tier(const TaskSpec&, const Resources& r) {
    return has_hint(r, "disk_tier") && hint_text(r, "disk_tier") != "best";
}
bool best_disk_tier(const TaskSpec&, const Resources& r) {
    return hint_text(r, "disk_tier") == "best";
}
// SkyPilot: only `best` needs CUSTOM_NETWORK_TIER.
bool best_network_tier(const TaskSpec&, const Resources& r) {
    return hint_text(r, "network_tier") == "best";
}
bool other_network_tier(const TaskSpec&, const Resources& r) {
    return has_hint(r, "network_tier") && hint_text(r, "network_tier") != "best";
}
// Autostop without `down` (stop when idle) versus autodown or autostop turned off.
bool autostop_stops(const TaskSpec&, const Resources& r) {
    auto it = r.hints.find("autostop");
    if (it == r.hints.end()) {
        return false;
    }
    const auto& v = it->second;
    if (v.is_boolean()) {
        return v.get<bool>();
    }
    if (v.is_object()) {
        // Not value("down", false): that throws when `down` is there but not a boolean ("down: yes!").
        const auto down = v.find("down");
        return !(down != v.end() && down->is_boolean() && down->get<bool>());
    }
    return true; // idle minutes (a number or "10m")
}
bool autostop_harmless(const TaskSpec& spec, const Resources& r) {
    return has_hint(r, "autostop") && !autostop_stops(spec, r);
}
bool has_local_disk(const TaskSpec&, const Resources& r) {
    return has_hint(r, "local_disk");
}
bool has_job_recovery(const TaskSpec&, const Resources& r) {
    return has_hint(r, "job_recovery");
}
bool has_max_cost(const TaskSpec&, const Resources& r) {
    return has_hint(r, "max_hourly_cost");
}
bool has_priority(const TaskSpec&, const Resources& r) {
    return has_hint(r, "priority");
}
bool has_service(const TaskSpec& spec, const Resources&) {
    return spec.service.has_value();
}

bool has_priority_class(const TaskSpec&, const Resources& r) {
    return has_hint(r, "priority_class");
}
bool has_sweep(const TaskSpec& spec, const Resources&) {
    return spec.sweep.has_value();
}
bool has_multi_node_sweep(const TaskSpec& spec, const Resources&) {
    return spec.sweep.has_value() && spec.num_nodes > 1;
}

// What each condition reads, indexed by SpecCondition.
struct Condition {
    std::string_view field;
    bool (*is_set)(const TaskSpec& spec, const Resources& resources);
};
const std::array<Condition, 22> k_conditions{{
    {"service", has_service},
    {"resources.use_spot", uses_spot},
    {"resources.image_id", has_image},
    {"resources.accelerators", wants_fractional_gpu},
    {"num_nodes", is_multi_node},
    {"resources.ports", has_ports},
    {"resources.disk_tier", custom_disk_tier},
    {"resources.network_tier", best_network_tier},
    {"resources.autostop", autostop_stops},
    {"resources.local_disk", has_local_disk},
    {"file_mounts", has_file_mounts},
    {"resources.labels", has_labels},
    {"resources.disk_size", has_disk_size},
    {"resources.disk_tier", best_disk_tier},
    {"resources.network_tier", other_network_tier},
    {"resources.autostop", autostop_harmless},
    {"resources.job_recovery", has_job_recovery},
    {"resources.max_hourly_cost", has_max_cost},
    {"resources.priority", has_priority},
    {"resources.priority_class", has_priority_class},
    {"sweep", has_sweep},
    {"sweep", has_multi_node_sweep},
}};
static_assert(static_cast<std::size_t>(SpecCondition::multi_node_sweep) + 1 == 22,
              "k_conditions has a row for every SpecCondition");

std::vector<Unsupported> collect(const TaskSpec& spec, const Resources& resources, BackendKind kind,
                                 bool refused) {
    std::vector<Unsupported> out;
    for (const auto& cell : traits_of(kind).fields) {
        const std::string_view why = refused ? cell.why_not : cell.ignored;
        const auto& condition = k_conditions[static_cast<std::size_t>(cell.when)];
        if (why.empty() || !condition.is_set(spec, resources)) {
            continue;
        }
        out.push_back({std::string(condition.field),
                       fmt::format("{} on {}: {}", refused ? "not supported" : "ignored", to_string(kind), why)});
    }
    // Object stores and SkyPilot storage objects: tandem copies local files only, on every backend.
    for (const auto& [destination, value] : refused ? spec.file_mounts : std::map<std::string, nlohmann::json>{}) {
        if (is_local_source(value)) {
            continue;
        }
        std::string source = value.is_string() ? value.get<std::string>()
                                   : value.is_object() && value.contains("source") && value["source"].is_string()
                                       ? value["source"].get<std::string>()
                                       : std::string("a storage object");
        std::replace_if(source.begin(), source.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, '?');
        out.push_back({"file_mounts." + destination,
                       fmt::format("not supported on {}: {} is an object store or a SkyPilot storage object; tandem "
                                   "copies local files and folders only (fetch it in setup, e.g. with the store's "
                                   "CLI)",
                                   to_string(kind), source)});
    }
    return out;
}

} // namespace

std::vector<Unsupported> unsupported_fields(const TaskSpec& spec, const Resources& resources,
                                            BackendKind kind) {
    return collect(spec, resources, kind, true);
}

std::vector<Unsupported> ignored_fields(const TaskSpec& spec, const Resources& resources, BackendKind kind) {
    return collect(spec, resources, kind, false);
}

} // namespace tandem
