#pragma once
// Internal to kubeconfig loading and exec plugins: base64 (kubeconfig's *-data fields and the CA sent to
// exec plugins), a PEM sniff, and reading a small file whole.

#include <optional>
#include <string>
#include <string_view>

namespace tandem::k8s::detail {

// Standard alphabet; whitespace (line breaks in pasted data) is ignored and padding is optional, as Go's
// decoder of kubeconfig []byte fields accepts. nullopt on any other character or a truncated quantum.
std::optional<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

// True when the text holds a PEM block ("-----BEGIN ...").
bool looks_like_pem(std::string_view text);

// The whole file, or nullopt with `why` set to strerror-style text ("No such file or directory").
std::optional<std::string> read_file(const std::string& path, std::string& why);

// Leading and trailing whitespace removed (token files end with a newline).
std::string trim(std::string_view text);

} // namespace tandem::k8s::detail
