#pragma once
// One YAML document from untrusted text (config.yaml, a kubeconfig), with the guards task files get: text
// yaml-cpp could never finish is refused before it parses, and nesting is bounded.

#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace tandem {

// The first document (a null node for empty text); a YAML error is a `config` error naming
// file:line:col ("invalid YAML: ...").
Result<YAML::Node> load_yaml_document(std::string_view text, const std::string& file_name);

} // namespace tandem
