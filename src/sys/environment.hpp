#pragma once
// This process's environment and working folder, read in one place; core gets them as a GetEnv and a
// base folder from its caller.

#include <optional>
#include <string>

namespace tandem::sys {

std::optional<std::string> getenv(const std::string& name);
// The current directory ("" when it cannot be read: it was removed under us).
std::string current_dir();
// This machine's name (gethostname), "" when it has none.
std::string host_name();

} // namespace tandem::sys
