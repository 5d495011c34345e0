// The one table of which spec fields each backend kind honours, ignores or refuses. A field a backend
// cannot honour is an error with a precise reason, never silently dropped: a user who asks for spot
// capacity or a container image and silently gets neither would find out only after the job ran in the
// wrong place. A field that costs nothing to leave out (a cloud hint such as `disk_tier: best`) is
// accepted where SkyPilot accepts it on that backend, and `plan` says it was ignored.
//
// The Slurm and Kubernetes columns follow SkyPilot's own per-cloud tables (_CLOUD_UNSUPPORTED_FEATURES in
// sky/clouds/slurm.py and kubernetes.py, and Resources.get_required_cloud_features), with SkyPilot's
// reasons where it gives one.
//
// Backend-specific settings (`config.slurm.*`, `config.kubernetes.*`) are deliberately absent: they are
// addressed to one backend and simply do not apply to the others, so one task file can carry both.

#include "core/backend_support.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

namespace tandem {

namespace {

// Indexed by BackendKind.
using PerKind = std::array<std::string_view, 3>;
static_assert(static_cast<int>(BackendKind::local) == 0 && static_cast<int>(BackendKind::slurm) == 1 &&
                  static_cast<int>(BackendKind::kubernetes) == 2,
              "PerKind columns follow BackendKind's order");

// What a kind does with a field that is set: supported (both columns empty), refused (why_not), or
// accepted without effect (ignored).
struct FieldRule {
    std::string_view field;
    bool (*is_set)(const TaskSpec& spec, const Resources& resources);
    PerKind why_not; // {local, slurm, kubernetes}; empty: not refused
    PerKind ignored; // {local, slurm, kubernetes}; empty: not ignored (supported or refused)
};

constexpr std::string_view k_yes{};

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

constexpr std::string_view k_no_labels = "its jobs carry no labels (SkyPilot ignores them there too)";
constexpr std::string_view k_ends_by_itself =
    "a tandem job ends when its run ends; nothing stays up to stop or tear down";

// Rows are in the order their errors are reported (the planner shows the first ones).
const std::array<FieldRule, 20> k_rules{{
    {"service",
     has_service,
     {"services run on Kubernetes (a Deployment behind a Service); this machine runs jobs",
      "services run on Kubernetes (a Deployment behind a Service); Slurm runs batch jobs", k_yes},
     {}},
    {"resources.use_spot",
     uses_spot,
     {"local has no spot capacity", "Spot instances are not supported in Slurm.",
      "Spot instances are not supported in Kubernetes."},
     {}},
    {"resources.image_id",
     has_image,
     {"the task runs directly on this machine (no container runtime)",
      "jobs run on the node's own OS (no container runtime)", k_yes},
     {}},
    {"resources.accelerators",
     wants_fractional_gpu,
     {"fractional GPUs need MIG or time-sliced GPUs (on k8s)",
      "fractional GPUs need MIG or time-sliced GPUs (on k8s)", k_yes},
     {}},
    {"num_nodes", is_multi_node, {"local runs one node", k_yes, k_yes}, {}},
    {"resources.ports", has_ports, {k_yes, "Opening ports is not supported in Slurm.", k_yes}, {}},
    {"resources.disk_tier",
     custom_disk_tier,
     {k_yes, "Slurm supports only disk_tier: best (as in SkyPilot)",
      "Custom disk tiers are not supported in Kubernetes."},
     {"this machine's disk is used as it is", {}, {}}},
    {"resources.network_tier",
     best_network_tier,
     {k_yes, k_yes, "Custom network tier is currently not supported in Kubernetes."},
     {"this machine's network is used as it is", "Slurm nodes keep their own network (as in SkyPilot)", {}}},
    {"resources.autostop",
     autostop_stops,
     {"local does not support autostop", "Slurm does not support autostop.",
      "Auto-stop is not supported on Kubernetes."},
     {}},
    {"resources.local_disk",
     has_local_disk,
     {k_yes, "Local disk is not supported on Slurm", k_yes},
     {"this machine's disk is used as it is", {}, "pods use the node's disks as the cluster sets them up"}},
    {"file_mounts",
     has_file_mounts,
     {"the task runs on this machine, where its files already are: use their paths",
      k_yes, // over SSH (a REST-only cluster says so at submit)
      k_yes}, // over pods/exec into each pod's upload container
     {}},
    // Accepted everywhere it applies, without effect: `plan` lists them.
    {"resources.labels", has_labels, {}, {k_no_labels, k_no_labels, {}}},
    {"resources.disk_size",
     has_disk_size,
     {},
     {"the task uses this machine's disk as it is",
      "SkyPilot's disk_size sizes a VM's disk; Slurm nodes keep theirs (node-local scratch: "
      "config.slurm.sbatch_options {tmp: SIZE})",
      "SkyPilot's disk_size sizes a VM's disk; pods use the node's (ephemeral-storage: "
      "config.kubernetes.pod_config)"}},
    {"resources.disk_tier", best_disk_tier, {}, {"best needs nothing", "best needs nothing", "best needs nothing"}},
    {"resources.network_tier",
     other_network_tier,
     {},
     {"standard needs nothing", "standard needs nothing", "standard needs nothing"}},
    {"resources.autostop", autostop_harmless, {}, {k_ends_by_itself, k_ends_by_itself, k_ends_by_itself}},
    {"resources.job_recovery",
     has_job_recovery,
     {},
     {"it applies to SkyPilot managed jobs (sky jobs launch); tandem runs the task once",
      "it applies to SkyPilot managed jobs (sky jobs launch); tandem runs the task once",
      "it applies to SkyPilot managed jobs (sky jobs launch); tandem runs the task once (retries: "
      "config.kubernetes.backoff_limit)"}},
    {"resources.max_hourly_cost",
     has_max_cost,
     {},
     {"this machine has no price: always met", "Slurm has no price: always met",
      "Kubernetes has no price: always met"}},
    {"resources.priority",
     has_priority,
     {},
     {"it orders SkyPilot managed jobs; tandem has no jobs controller",
      "it orders SkyPilot managed jobs; tandem has no jobs controller",
      "it orders SkyPilot managed jobs; tandem has no jobs controller"}},
    {"resources.priority_class",
     has_priority_class,
     {},
     {"a Kubernetes PriorityClass means nothing here", "a Kubernetes PriorityClass means nothing to Slurm",
      {}}},
}};

std::vector<Unsupported> collect(const TaskSpec& spec, const Resources& resources, BackendKind kind,
                                 bool refused) {
    const auto column = static_cast<std::size_t>(kind);
    std::vector<Unsupported> out;
    for (const auto& rule : k_rules) {
        const std::string_view why = (refused ? rule.why_not : rule.ignored)[column];
        if (why.empty() || !rule.is_set(spec, resources)) {
            continue;
        }
        out.push_back({std::string(rule.field),
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
