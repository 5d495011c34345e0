#pragma once
// Shared by the fuzz targets (fuzz/fuzz_*.cpp): the input as text, and invariant checks that stop the run
// with __builtin_trap() so libFuzzer saves the input as a crash.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void broken(const char* invariant, std::string_view detail = {}) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n%.*s\n", invariant, static_cast<int>(detail.size()),
                 detail.data());
    __builtin_trap();
}

inline void check(bool ok, const char* invariant, std::string_view detail = {}) {
    if (!ok) {
        broken(invariant, detail);
    }
}

inline bool one_line(std::string_view s) {
    return s.find('\n') == std::string_view::npos;
}

// A message listing several problems (format_diagnostics): every line starts with `prefix` (the file).
inline void check_lines_start_with(std::string_view message, std::string_view prefix, const char* invariant) {
    std::string_view rest = message;
    while (true) {
        check(rest.starts_with(prefix), invariant, message);
        const auto nl = rest.find('\n');
        if (nl == std::string_view::npos) {
            return;
        }
        rest.remove_prefix(nl + 1);
    }
}

// tandem's rule (core/error.hpp): an Error's message is one line.
template <typename R> void check_error_one_line(const R& result, const char* where) {
    if (!result) {
        check(one_line(result.error().message), where, result.error().message);
    }
}

} // namespace fuzz
