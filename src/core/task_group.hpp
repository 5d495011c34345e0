#pragma once
// A task file with several YAML documents, as SkyPilot defines them (sky/utils/dag_utils.py):
//
// - a pipeline: an optional first document holding only `name` (and `execution: serial`), then the tasks,
//   run one after another, each when the one before SUCCEEDED;
// - a job group: a first document with `name`, `execution: parallel`, optional `primary_tasks` and
//   `termination_delay`, then the members, which all start together. Each member is a full task with a
//   name of its own ([A-Za-z0-9_-], unique in the group). Without `primary_tasks` every member is primary.
//
// One document is a plain task. Every member is loaded as a task file of its own would be (the same
// checks, the command-line overrides applied to each), and every problem of every document is reported
// at once with its file:line:col.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec_loader.hpp"

namespace tandem {

enum class GroupKind { pipeline, parallel };

struct TaskGroup {
    std::string source_file;
    std::string name;
    GroupKind kind = GroupKind::pipeline;
    std::vector<TaskSpec> members;    // in file order (a pipeline's order of execution)
    std::vector<std::string> primary; // member names; empty: every member is primary
    // termination_delay: how long the other members may run on after the primaries ended, in seconds,
    // by member name ("" for the default, 0 when none is given).
    std::map<std::string, std::int64_t> termination_delay;
    std::vector<SpecNote> notes; // header keys SkyPilot warns about and ignores

    bool is_primary(const std::string& member) const;
    std::int64_t termination_delay_of(const std::string& member) const;
};

struct TaskFileLoad {
    std::optional<TaskSpec> task;   // one document
    std::optional<TaskGroup> group; // several
    std::vector<Diagnostic> diagnostics; // non-empty: neither is set
};

TaskFileLoad load_task_text(std::string_view text, const std::string& file_name, const SpecOverrides& overrides,
                            const LoadOptions& options);
TaskFileLoad load_task_file(const std::string& path, const SpecOverrides& overrides, const LoadOptions& options);

std::string_view to_string(GroupKind kind);

// SkyPilot's rules, shared by a loaded group and a launched one: with no primary_tasks every member is
// primary; a member's termination_delay is its own, else the default ("" key), else 0.
bool is_primary_member(const std::vector<std::string>& primary, const std::string& member);
std::int64_t termination_delay_for(const std::map<std::string, std::int64_t>& delays, const std::string& member); // SkyPilot's `execution`: "serial" (a pipeline), "parallel"

} // namespace tandem
