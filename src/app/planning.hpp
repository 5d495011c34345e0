#pragma once
// Planning: a task file loaded and checked against the configuration, every configured cluster asked for
// its inventory at once, and the planner's answer (core/planner.hpp).

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "app/session.hpp"
#include "core/planner.hpp"
#include "core/task_group.hpp"

namespace tandem::app {

// A task file: one task, or a pipeline or job group (several documents).
struct LoadedFile {
    std::optional<TaskSpec> task;
    std::optional<TaskGroup> group;
};

// Loads and checks the file (every member of a group: git credentials, backend support).
Result<LoadedFile> load_task_or_group(Session& session, const std::string& file,
                                      const SpecOverrides& overrides);

struct PlannedTask {
    TaskSpec spec;
    Inventory inventory;
    Plan plan;
};

// Asks every cluster for its inventory (an unreachable one is kept, marked down), then plans. max_age > 0
// lets backends answer from a cache that young (launch); plan and infra ask fresh.
Result<PlannedTask> plan_loaded_task(Session& session, TaskSpec spec,
                                     std::chrono::seconds max_age = std::chrono::seconds(0));
Result<Inventory> gather_inventory(Session& session, std::chrono::seconds max_age = std::chrono::seconds(0));
std::string rejection_line(const Rejection& r);
Error no_placement_error(const PlannedTask& planned);
std::string placement_gpus(const TaskSpec& spec, const Placement& placement);
nlohmann::json placement_json(const Placement& p);

} // namespace tandem::app
