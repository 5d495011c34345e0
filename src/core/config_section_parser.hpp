#pragma once
// Internal to the spec loader: a task's `config:` section. tandem's own keys (config.slurm.partition ...,
// config.kubernetes.namespace ..., config.pending_timeout) and SkyPilot's task-overridable ones
// (sbatch_options, quota, cpu_partition, provision_timeout, remote_identity, custom_metadata, kueue,
// set_pod_resource_limits ...); every other SkyPilot config key is dealt with by the key table.

#include <yaml-cpp/yaml.h>

#include "core/spec.hpp"
#include "core/yaml_walker.hpp"

namespace tandem::detail {

// Fills spec.slurm, spec.kubernetes, spec.pending_timeout_seconds and spec.notes; problems go to the
// walker's diagnostics.
void parse_config_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec);

// The backends' own sections (config.slurm, config.kubernetes), as their rows in backend_traits.cpp name
// them; `path` is the section's ("config.slurm").
void parse_slurm_settings(YamlWalker& w, const YAML::Node& node, const std::string& path, TaskSpec& spec);
void parse_kubernetes_settings(YamlWalker& w, const YAML::Node& node, const std::string& path, TaskSpec& spec);

} // namespace tandem::detail
