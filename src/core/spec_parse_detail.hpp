#pragma once
// Internal to the spec loader: the pieces shared by the YAML walk (spec_loader.cpp) and the
// command-line overrides (spec_overrides.cpp).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/spec_loader.hpp"

namespace tandem::detail {

// envs/secrets as written: a null value must be supplied on the command line.
struct PendingValues {
    std::vector<std::pair<std::string, std::optional<std::string>>> entries;
    std::vector<SourceLoc> locs; // parallel to entries
};

struct ParsedSpec {
    TaskSpec spec;
    PendingValues envs;
    PendingValues secrets;
    std::optional<int> sweep_parallel; // `sweep_parallel:`, put into the sweep once overrides are in
};

bool valid_env_name(std::string_view name);

// Applies overrides; problems are reported with the flag as their location.
void apply_overrides(ParsedSpec& parsed, const SpecOverrides& overrides, const LoadOptions& options,
                     std::vector<Diagnostic>& diagnostics);

// Moves resolved envs/secrets into the spec; a value still null is an error.
void resolve_pending(ParsedSpec& parsed, std::vector<Diagnostic>& diagnostics);

// Every YAML document of a task file (yaml-cpp's errors become one diagnostic, nullopt).
std::optional<std::vector<YAML::Node>> load_documents(std::string_view text, const std::string& file_name,
                                                      std::vector<Diagnostic>& diagnostics);

// One task from one document: the whole walk, overrides and checks (what load_spec does for a file).
SpecLoad load_spec_root(const YAML::Node& root, const std::string& file_name, const SpecOverrides& overrides,
                        const LoadOptions& options);

} // namespace tandem::detail
