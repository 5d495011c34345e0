#pragma once
// bash words written by tandem's pure script renderers (the Slurm batch script, the Kubernetes pod
// program, the local runner): quoting and bash's rule for variable names.

#include <string>
#include <string_view>

namespace tandem {

// A bash word whose value is exactly `value`: single quotes, with ' written as '\'' and CR as '$'\r''.
// `value` must not contain NUL (no bash string can).
std::string shell_quote(std::string_view value);

// bash's own rule for variable names: [A-Za-z_][A-Za-z0-9_]*.
bool is_shell_name(std::string_view name);

} // namespace tandem
