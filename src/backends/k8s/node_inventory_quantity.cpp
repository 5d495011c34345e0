// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource):
//   <quantity> ::= <signedNumber><suffix>
//   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E | (e|E)<signedNumber>
// "1E" is 10^18 (exa) while "1E3" is 1000: an e/E followed by a number is an exponent.

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

#include "backends/k8s/node_inventory.hpp"

namespace tandem::k8s {

namespace {

struct Suffix {
    std::string_view text;
    double factor;
};

constexpr std::array<Suffix, 16> k_suffixes{{
    {"Ki", 1024.0},
    {"Mi", 1024.0 * 1024},
    {"Gi", 1024.0 * 1024 * 1024},
    {"Ti", 1024.0 * 1024 * 1024 * 1024},
    {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024},
    {"Ei", 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024},
    {"n", 1e-9},
    {"u", 1e-6},
    {"m", 1e-3},
    {"", 1},
    {"k", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
}};

// [+-]digits[.digits] (either side of the point may be empty, not both); returns the characters used.
std::size_t number_length(std::string_view s, bool allow_point) {
    std::size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        ++i;
    }
    std::size_t digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        ++i;
        ++digits;
    }
    if (allow_point && i < s.size() && s[i] == '.') {
        ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
            ++i;
            ++digits;
        }
    }
    return digits == 0 ? 0 : i;
}

} // namespace

std::optional<double> parse_quantity(std::string_view text) {
    const std::size_t n = number_length(text, true);
    if (n == 0) {
        return std::nullopt;
    }
    double value = 0;
    std::string_view num = text.substr(0, n);
    if (!num.empty() && num.front() == '+') {
        num.remove_prefix(1);
    }
    const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), value);
    if (ec != std::errc() || end != num.data() + num.size()) {
        return std::nullopt;
    }
    const std::string_view suffix = text.substr(n);
    for (const auto& s : k_suffixes) {
        if (suffix == s.text) {
            return value * s.factor;
        }
    }
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) {
        return std::nullopt;
    }
    const std::string_view exp_text = suffix.substr(1);
    if (number_length(exp_text, false) != exp_text.size()) {
        return std::nullopt;
    }
    int exp = 0;
    const char* first = exp_text.data() + (exp_text.front() == '+' ? 1 : 0);
    const auto [e_end, e_ec] = std::from_chars(first, exp_text.data() + exp_text.size(), exp);
    if (e_ec != std::errc() || e_end != exp_text.data() + exp_text.size()) {
        return std::nullopt;
    }
    return value * std::pow(10.0, exp);
}

} // namespace tandem::k8s
