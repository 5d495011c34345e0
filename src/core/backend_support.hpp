#pragma once
// Which spec fields each backend kind can honour, in one table. Validation uses it to reject a field no
// configured backend supports; the planner uses it to reject pools of kinds that cannot run the task.

#include <optional>
#include <string>
#include <vector>

#include "core/inventory.hpp"
#include "core/spec.hpp"

namespace tandem {

struct Unsupported {
    std::string field;  // dotted path, e.g. "resources.use_spot"
    std::string reason; // "not supported on slurm: Spot instances are not supported in Slurm."
};

// Every field of `resources` (one option) plus the task-level fields that `kind` cannot honour.
std::vector<Unsupported> unsupported_fields(const TaskSpec& spec, const Resources& resources,
                                            BackendKind kind);

// The fields `kind` accepts without effect ("ignored on slurm: best needs nothing"), for `plan`.
std::vector<Unsupported> ignored_fields(const TaskSpec& spec, const Resources& resources, BackendKind kind);

} // namespace tandem
