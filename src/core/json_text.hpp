#pragma once
// JSON string text for the skimmer (json_skim.hpp) and Kubernetes' protobuf reader: escapes and UTF-8,
// checked as strictly as nlohmann's parser checks them, so a kept string can always be dumped again.

#include <string>
#include <string_view>

namespace tandem::json_text {

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s);

// The text between a JSON string's quotes, unescaped into `out`. Empty on success, else what is wrong
// ("bad escape in a string", "lone surrogate in a string"). `raw` must not end inside an escape.
std::string_view unescape_json(std::string_view raw, std::string& out);

} // namespace tandem::json_text
