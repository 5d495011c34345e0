#pragma once
// Internal to the spec loader: the `resources` section of a task file, with its any_of/ordered
// alternatives, accelerators, ports, labels, and the legacy `cloud:`/`region:` spelling.

#include <yaml-cpp/yaml.h>

#include "core/spec.hpp"
#include "core/yaml_walker.hpp"

namespace tandem::detail {

// Fills spec.resources, spec.alternatives(_ordered) and the locations of the fields it saw; problems
// go to the walker's diagnostics.
void parse_resources_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec);

} // namespace tandem::detail
