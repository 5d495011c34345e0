#pragma once
// Internal to the spec loader: a task's `service:` section (SkyPilot's sky serve), checked as SkyPilot's
// sky/serve/service_spec.py checks it. Every key SkyPilot's service schema knows is in the key table
// (sections "service", "service.readiness_probe", "service.replica_policy", "service.tls").

#include <string>

#include <yaml-cpp/yaml.h>

#include "core/spec.hpp"
#include "core/spec_loader.hpp"
#include "core/yaml_walker.hpp"

namespace tandem::detail {

// Fills spec.service (and the locations of the fields it saw); problems go to the walker's diagnostics.
// tls files are resolved as file_mounts sources are: `~` expanded, a relative path against options.base_dir,
// checked through options.files.
void parse_service_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec, const LoadOptions& options);

} // namespace tandem::detail
