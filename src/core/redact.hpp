#pragma once
// The one redaction function: every line that may carry a secret passes through it before it reaches
// stdout, stderr, a log or the store.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

inline constexpr std::string_view k_redacted = "<redacted>";

// Replaces every occurrence of each secret value (ignoring values shorter than 3 characters, which would
// blank out ordinary text) with <redacted>.
std::string redact(std::string_view text, const std::vector<std::string>& secret_values);
std::vector<std::string> secret_values(const std::vector<std::pair<std::string, std::string>>& secrets);

} // namespace tandem
