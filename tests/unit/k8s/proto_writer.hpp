#pragma once
// Writing protobuf bytes by hand for the decoder tests: fields by number, as the API server sends them.

#include <cstdint>
#include <string>
#include <string_view>

namespace tandem_test::pb {

inline std::string varint(std::uint64_t v) {
    std::string out;
    do {
        const auto low = static_cast<char>(v & 0x7f);
        v >>= 7;
        out += static_cast<char>(low | (v != 0 ? 0x80 : 0));
    } while (v != 0);
    return out;
}

// A message under construction: each call appends one field.
struct Msg {
    std::string bytes;
    Msg& num(std::uint32_t field, std::uint64_t v) {
        bytes += varint(std::uint64_t{field} << 3) + varint(v);
        return *this;
    }
    Msg& str(std::uint32_t field, std::string_view s) {
        bytes += varint((std::uint64_t{field} << 3) | 2) + varint(s.size()) + std::string(s);
        return *this;
    }
    Msg& msg(std::uint32_t field, const Msg& m) { return str(field, m.bytes); }
    Msg& fixed32(std::uint32_t field) {
        bytes += varint((std::uint64_t{field} << 3) | 5) + std::string(4, '\x01');
        return *this;
    }
    Msg& fixed64(std::uint32_t field) {
        bytes += varint((std::uint64_t{field} << 3) | 1) + std::string(8, '\x02');
        return *this;
    }
    // A map<string,string> entry.
    Msg& entry(std::uint32_t field, std::string_view key, std::string_view value) {
        return msg(field, Msg().str(1, key).str(2, value));
    }
    // A meta/v1 Time.
    Msg& time(std::uint32_t field, std::int64_t seconds) {
        return msg(field, Msg().num(1, static_cast<std::uint64_t>(seconds)));
    }
};

// The API server's envelope: "k8s\0" and a runtime.Unknown around `raw`.
inline std::string envelope(std::string_view api_version, std::string_view kind, const Msg& raw,
                            std::string_view encoding = "") {
    Msg unknown;
    unknown.msg(1, Msg().str(1, api_version).str(2, kind)).str(2, raw.bytes);
    if (!encoding.empty()) {
        unknown.str(3, encoding);
    }
    unknown.str(4, "");
    return std::string("k8s\0", 4) + unknown.bytes;
}

} // namespace tandem_test::pb
