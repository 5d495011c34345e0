// The one table of which spec fields each backend kind honours. A field a backend cannot honour is an
// error with a precise reason, never silently dropped: a user who asks for spot capacity or a container
// image and silently gets neither would find out only after the job ran in the wrong place.
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

// Indexed by BackendKind; an empty reason means the kind supports the field.
using PerKind = std::array<std::string_view, 3>;
static_assert(static_cast<int>(BackendKind::local) == 0 && static_cast<int>(BackendKind::slurm) == 1 &&
                  static_cast<int>(BackendKind::kubernetes) == 2,
              "PerKind columns follow BackendKind's order");

struct FieldRule {
    std::string_view field;
    bool (*is_set)(const TaskSpec& spec, const Resources& resources);
    PerKind why_not; // {local, slurm, kubernetes}
};

constexpr std::string_view k_supported{};

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
bool has_file_mounts(const TaskSpec& spec, const Resources&) {
    return !spec.file_mounts.empty();
}

bool wants_fractional_gpu(const TaskSpec&, const Resources& r) {
    return std::any_of(r.accelerators.begin(), r.accelerators.end(),
                       [](const Accelerator& a) { return a.fractional(); });
}

// Rows are in the order their errors are reported (the planner shows the first ones).
const std::array<FieldRule, 8> k_rules{{
    {"resources.use_spot",
     uses_spot,
     {"local has no spot capacity", "slurm has no spot capacity", "k8s has no spot capacity"}},
    {"resources.image_id",
     has_image,
     {"the task runs directly on this machine (no container runtime)",
      "jobs run on the node's own OS (no container runtime)", k_supported}},
    {"resources.accelerators",
     wants_fractional_gpu,
     {"fractional GPUs need MIG or time-sliced GPUs (on k8s)",
      "fractional GPUs need MIG or time-sliced GPUs (on k8s)", k_supported}},
    {"num_nodes", is_multi_node, {"local runs one node", k_supported, k_supported}},
    {"resources.ports", has_ports, {k_supported, "slurm jobs cannot expose ports", k_supported}},
    {"resources.labels",
     has_labels,
     {"local processes carry no labels", "slurm jobs carry no labels", k_supported}},
    {"resources.disk_size_gb",
     has_disk_size,
     {"the task uses this machine's disk as it is", k_supported, k_supported}},
    {"file_mounts",
     has_file_mounts,
     {"file_mounts are not supported on local yet", "file_mounts are not supported on slurm yet",
      "file_mounts are not supported on k8s yet"}},
}};

} // namespace

std::vector<Unsupported> unsupported_fields(const TaskSpec& spec, const Resources& resources,
                                            BackendKind kind) {
    const auto column = static_cast<std::size_t>(kind);
    std::vector<Unsupported> out;
    for (const auto& rule : k_rules) {
        const std::string_view why = rule.why_not[column];
        if (why.empty() || !rule.is_set(spec, resources)) {
            continue;
        }
        out.push_back(
            {std::string(rule.field), fmt::format("not supported on {}: {}", to_string(kind), why)});
    }
    return out;
}

} // namespace tandem
