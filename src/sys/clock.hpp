#pragma once
// The system's clock and randomness, once for every layer above core (core takes them through the seams
// its callers hand in): unix seconds, and random tokens for submit tokens, group channels and names.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::sys {

// Seconds since the epoch (the store's and the backends' timestamps).
std::int64_t now_seconds();

// `length` characters drawn from `alphabet` with the system's random source (std::random_device).
inline constexpr std::string_view k_token_alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
std::string random_token(std::size_t length, std::string_view alphabet = k_token_alphabet);
// A fresh submit token (JobRecord::submit_token): 10 characters of [a-z0-9], fit for a Kubernetes label
// and name.
std::string new_submit_token();
// `digits` lowercase hexadecimal digits.
std::string random_hex(std::size_t digits);

} // namespace tandem::sys
