#include "sys/clock.hpp"

#include <chrono>
#include <random>

namespace tandem::sys {

std::int64_t now_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string random_token(std::size_t length, std::string_view alphabet) {
    std::random_device rd;
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::string token;
    token.reserve(length);
    for (std::size_t i = 0; i < length; ++i) {
        token += alphabet[pick(rd)];
    }
    return token;
}

std::string new_submit_token() {
    return random_token(10);
}

std::string random_hex(std::size_t digits) {
    return random_token(digits, "0123456789abcdef");
}

} // namespace tandem::sys
