// JSON string text for the skimmer and the protobuf reader (see json_text.hpp).

#include "core/json_text.hpp"

#include <charconv>
#include <cstdint>

namespace tandem::json_text {

namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

} // namespace

bool valid_utf8(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* end = p + s.size();
    while (p < end) {
        const unsigned char c = *p;
        if (c < 0x80) {
            ++p;
            continue;
        }
        int n = 0;
        unsigned lo = 0x80, hi = 0xBF; // the allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF; // no surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            return false;
        }
        if (end - p <= n || p[1] < lo || p[1] > hi) {
            return false;
        }
        for (int i = 2; i <= n; ++i) {
            if ((p[i] & 0xC0) != 0x80) {
                return false;
            }
        }
        p += n + 1;
    }
    return true;
}

std::string_view unescape_json(std::string_view raw, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\') {
            out += raw[i];
            continue;
        }
        const char e = raw[++i]; // skip_string saw a character after every backslash
        static constexpr std::string_view k_from = "\"\\/bfnrt", k_to = "\"\\/\b\f\n\r\t";
        if (const auto at = k_from.find(e); at != std::string_view::npos) {
            out += k_to[at];
            continue;
        }
        auto hex4 = [&](std::size_t at, std::uint32_t& v) {
            const char* first = raw.data() + at;
            return at + 4 <= raw.size() && std::from_chars(first, first + 4, v, 16).ptr == first + 4;
        };
        std::uint32_t cp = 0;
        if (e != 'u' || !hex4(i + 1, cp)) {
            return "bad escape in a string";
        }
        i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return "lone surrogate in a string";
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (i + 2 >= raw.size() || raw[i + 1] != '\\' || raw[i + 2] != 'u' || !hex4(i + 3, low) ||
                low < 0xDC00 || low > 0xDFFF) {
                return "lone surrogate in a string";
            }
            i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
    }
    return {};
}

} // namespace tandem::json_text
