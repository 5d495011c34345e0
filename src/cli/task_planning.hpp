#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/planner.hpp"
#include "core/task_group.hpp"

namespace tandem::cli {

// A task file: one task, or a pipeline or job group (several documents).
struct LoadedFile {
    std::optional<TaskSpec> task;
    std::optional<TaskGroup> group;
};

// Loads and checks the file (every member of a group: git credentials, backend support).
Result<LoadedFile> load_task_or_group(Context& ctx, const SpecFlags& flags);

struct PlannedTask {
    TaskSpec spec;
    Inventory inventory;
    Plan plan;
};

// Loads the spec, asks every cluster for its inventory (an unreachable one is kept, marked down), plans.
// max_age > 0 lets backends answer from a cache that young (launch); plan and infra ask fresh.
Result<PlannedTask> plan_task(Context& ctx, const SpecFlags& flags,
                              std::chrono::seconds max_age = std::chrono::seconds(0));
Result<PlannedTask> plan_loaded_task(Context& ctx, TaskSpec spec,
                                     std::chrono::seconds max_age = std::chrono::seconds(0));
Result<Inventory> gather_inventory(Context& ctx, std::chrono::seconds max_age = std::chrono::seconds(0));
std::string rejection_line(const Rejection& r);
Error no_placement_error(const PlannedTask& planned);
std::string placement_gpus(const TaskSpec& spec, const Placement& placement);

} // namespace tandem::cli

namespace tandem::cli {
nlohmann::json placement_json(const Placement& p);
}
