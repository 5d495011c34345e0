#pragma once
// The spec flags of launch and plan, and their file loaded and planned through app/planning.hpp.

#include <chrono>

#include "app/planning.hpp"
#include "cli/commands.hpp"

namespace tandem::cli {

using app::gather_inventory;
using app::LoadedFile;
using app::no_placement_error;
using app::placement_gpus;
using app::placement_json;
using app::plan_loaded_task;
using app::PlannedTask;
using app::rejection_line;

// Loads the flags' spec (a single task), asks every cluster for its inventory, plans.
Result<PlannedTask> plan_task(Context& ctx, const SpecFlags& flags,
                              std::chrono::seconds max_age = std::chrono::seconds(0));

} // namespace tandem::cli
