#pragma once
// Internal to the spec loader: a task's `sweep:` (issue 33; core/sweep.hpp) and `sweep_parallel:`,
// tandem's own top-level keys. A mapping KEY: [values] is a grid (the Cartesian product, the first key
// varying slowest); a list of mappings is the elements as written.

#include <yaml-cpp/yaml.h>

#include "core/spec.hpp"
#include "core/yaml_walker.hpp"

namespace tandem::detail {

// Fills spec.sweep (its parallel left 0); problems go to the walker's diagnostics with the key or element.
void parse_sweep_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec);

} // namespace tandem::detail
