// The JSON skimmer's scanner (see json_skim.hpp).

#include "core/json_skim.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "core/json_text.hpp"

namespace tandem::json_skim {

namespace {

using nlohmann::json;

// The bytes the skip loop stops at: quotes and brackets.
constexpr std::array<bool, 256> k_structural = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : std::string_view("\"{}[]")) {
        t[c] = true;
    }
    return t;
}();

const Member* find_member(const Shape& shape, std::string_view key) {
    for (const Member& m : shape.members) {
        if (m.key == key) {
            return &m;
        }
    }
    return nullptr;
}

} // namespace

bool Scanner::error(std::string_view what) {
    if (m_error.empty()) {
        m_error = m_p >= m_end ? fmt::format("{} (truncated after {} bytes)", what, m_end - m_begin)
                               : fmt::format("{} at byte {}", what, m_p - m_begin);
    }
    return false;
}

bool Scanner::expect(char c) { return take(c) || error(fmt::format("expected '{}'", c)); }

// At an opening quote: moves past the closing one, whose position memchr finds; a quote preceded by an
// odd number of backslashes is escaped. `plain` tells whether the string had no backslash at all.
bool Scanner::skip_string(bool* plain) {
    const char* start = ++m_p;
    bool escaped = false;
    for (;;) {
        const auto* q = static_cast<const char*>(std::memchr(m_p, '"', static_cast<std::size_t>(m_end - m_p)));
        if (q == nullptr) {
            m_p = m_end;
            return error("unterminated string");
        }
        std::size_t slashes = 0;
        while (q - slashes > start && q[-1 - static_cast<std::ptrdiff_t>(slashes)] == '\\') {
            ++slashes;
        }
        escaped = escaped || slashes > 0;
        m_p = q + 1;
        if (slashes % 2 == 0) {
            break;
        }
    }
    if (plain != nullptr) {
        *plain = !escaped && std::memchr(start, '\\', static_cast<std::size_t>(m_p - 1 - start)) == nullptr;
    }
    return true;
}

bool Scanner::skip_value() {
    space();
    if (m_p >= m_end) {
        return error("expected a value");
    }
    if (*m_p == '"') {
        return skip_string();
    }
    if (*m_p != '{' && *m_p != '[') {
        json ignored;
        return scalar(ignored);
    }
    m_stack.clear();
    for (;;) {
        while (m_p < m_end && !k_structural[static_cast<unsigned char>(*m_p)]) {
            ++m_p;
        }
        if (m_p >= m_end) {
            return error("unclosed object or array");
        }
        const char c = *m_p;
        if (c == '"') {
            if (!skip_string()) {
                return false;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            m_stack.push_back(c == '{' ? '}' : ']');
        } else if (m_stack.empty() || m_stack.back() != c) {
            return error(fmt::format("unexpected '{}'", c));
        } else {
            m_stack.pop_back();
        }
        ++m_p;
        if (m_stack.empty()) {
            return true;
        }
    }
}

// At an opening quote: the decoded string.
bool Scanner::string(std::string& out) {
    const char* start = m_p + 1;
    bool plain = false;
    if (!skip_string(&plain)) {
        return false;
    }
    const std::string_view raw(start, static_cast<std::size_t>(m_p - 1 - start));
    if (plain) {
        out.assign(raw);
    } else if (const auto bad = json_text::unescape_json(raw, out); !bad.empty()) {
        return error(bad);
    }
    for (char c : raw) {
        if (static_cast<unsigned char>(c) < 0x20) {
            return error("control character in a string");
        }
    }
    return json_text::valid_utf8(out) || error("invalid UTF-8 in a string");
}

// A number, true, false or null.
bool Scanner::scalar(json& out) {
    const char* start = m_p;
    auto word = [&](std::string_view w) {
        if (static_cast<std::size_t>(m_end - m_p) < w.size() || std::string_view(m_p, w.size()) != w) {
            return false;
        }
        m_p += w.size();
        return true;
    };
    if (word("true") || word("false")) {
        out = *start == 't';
        return true;
    }
    if (word("null")) {
        out = nullptr;
        return true;
    }
    auto digits = [&] {
        const char* from = m_p;
        while (m_p < m_end && *m_p >= '0' && *m_p <= '9') {
            ++m_p;
        }
        return m_p > from;
    };
    const bool negative = m_p < m_end && *m_p == '-';
    m_p += negative ? 1 : 0;
    const char* int_start = m_p;
    if (!digits() || (*int_start == '0' && m_p - int_start > 1)) {
        m_p = start;
        return error("expected a value");
    }
    bool integer = true;
    if (m_p < m_end && *m_p == '.') {
        ++m_p;
        integer = false;
        if (!digits()) {
            return error("bad number");
        }
    }
    if (m_p < m_end && (*m_p == 'e' || *m_p == 'E')) {
        ++m_p;
        integer = false;
        m_p += m_p < m_end && (*m_p == '+' || *m_p == '-') ? 1 : 0;
        if (!digits()) {
            return error("bad number");
        }
    }
    // As nlohmann reads them: non-negative integers unsigned, negative ones signed, else (or when out of
    // range) a double.
    if (integer && !negative) {
        std::uint64_t v = 0;
        if (std::from_chars(start, m_p, v).ec == std::errc()) {
            out = v;
            return true;
        }
    } else if (integer) {
        std::int64_t v = 0;
        if (std::from_chars(start, m_p, v).ec == std::errc()) {
            out = v;
            return true;
        }
    }
    double d = 0;
    const auto [end, ec] = std::from_chars(start, m_p, d);
    if (end != m_p || ec != std::errc()) {
        return error("bad number");
    }
    out = d;
    return true;
}

bool Scanner::value(json& out, const Shape* shape, int depth) {
    space();
    if (m_p >= m_end) {
        return error("expected a value");
    }
    if (depth > k_max_depth) {
        return error("nested too deeply");
    }
    switch (*m_p) {
    case '{':
        return object(out, shape, depth);
    case '[':
        return array(out, shape, depth);
    case '"': {
        std::string s;
        if (!string(s)) {
            return false;
        }
        out = std::move(s);
        return true;
    }
    default:
        return scalar(out);
    }
}

bool Scanner::object(json& out, const Shape* shape, int depth) {
    out = json::object();
    return members([&](const std::string& key) {
        if (shape == nullptr) {
            return value(out[key], nullptr, depth + 1);
        }
        if (const Member* m = find_member(*shape, key)) {
            return value(out[key], m->shape, depth + 1);
        }
        if (shape->keep_whole != nullptr && shape->keep_whole(key)) {
            return value(out[key], nullptr, depth + 1);
        }
        return skip_value();
    });
}

bool Scanner::array(json& out, const Shape* shape, int depth) {
    out = json::array();
    ++m_p;
    if (take(']')) {
        return true;
    }
    do {
        if (!value(out.emplace_back(), shape, depth + 1)) {
            return false;
        }
    } while (take(','));
    return expect(']');
}

} // namespace tandem::json_skim
