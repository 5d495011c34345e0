// The job identity's one-line encoding (see identity.hpp).

#include "core/identity.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace tandem {

namespace {

constexpr std::string_view k_prefix = "tandem:1:";
constexpr std::string_view k_any_version = "tandem:";

bool plain(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '~' || c == '-';
}

// The length of the UTF-8 character that starts at s[i] (1 for a stray byte).
std::size_t char_length(std::string_view s, std::size_t i) {
    std::size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) {
        ++n;
    }
    return n;
}

// Appends `key=value`, percent-encoded, with at most `limit` bytes of the value and within the budget:
// whole characters only; nothing at all when not even one fits.
void add(std::string& out, char key, std::string_view value, std::size_t limit) {
    static constexpr char hex[] = "0123456789ABCDEF";
    const std::size_t start = out.size();
    out += start == k_prefix.size() ? "" : ";";
    out += key;
    out += '=';
    const std::size_t empty = out.size();
    for (std::size_t i = 0; i < value.size();) {
        const std::size_t n = char_length(value, i);
        std::string piece;
        for (unsigned char c : value.substr(i, n)) {
            if (plain(c)) {
                piece += static_cast<char>(c);
            } else {
                piece += '%';
                piece += hex[c >> 4];
                piece += hex[c & 0xF];
            }
        }
        if (i + n > limit || out.size() + piece.size() > k_identity_budget) {
            break;
        }
        out += piece;
        i += n;
    }
    if (out.size() == empty) {
        out.resize(start);
    }
}

// A key as an error may quote it: untrusted, so only a plain one.
char shown(char key) {
    return plain(static_cast<unsigned char>(key)) ? key : '?';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

// A value as written: plain bytes and %XX; no control character once decoded.
Result<std::string> unescape(std::string_view raw, char key) {
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const auto c = static_cast<unsigned char>(raw[i]);
        if (c == '%') {
            if (i + 2 >= raw.size()) {
                return fail(ErrorKind::remote, fmt::format("identity: a cut escape in '{}'", shown(key)));
            }
            const int hi = hex_value(raw[i + 1]);
            const int low = hex_value(raw[i + 2]);
            if (hi < 0 || low < 0) {
                return fail(ErrorKind::remote, fmt::format("identity: a bad escape in '{}'", shown(key)));
            }
            const auto byte = static_cast<unsigned char>(hi * 16 + low);
            if (byte < 0x20 || byte == 0x7f) {
                return fail(ErrorKind::remote, fmt::format("identity: a control character in '{}'", shown(key)));
            }
            out += static_cast<char>(byte);
            i += 2;
        } else if (plain(c)) {
            out += static_cast<char>(c);
        } else {
            return fail(ErrorKind::remote, fmt::format("identity: an unescaped character in '{}'", shown(key)));
        }
    }
    return out;
}

bool is_token(std::string_view s) {
    return s.size() >= 6 && s.size() <= 32 &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

} // namespace

std::string encode_identity(const JobIdentity& id) {
    std::string out(k_prefix);
    // What finds the job first: the budget always holds these four.
    add(out, 't', id.token, 32);
    add(out, 'g', id.group, 32);
    if (id.element) {
        add(out, 'e', std::to_string(*id.element), 16);
    }
    add(out, 'm', id.member, 48);
    add(out, 'n', id.name, 64);
    add(out, 'u', id.user, 32);
    add(out, 'h', id.host, 32);
    add(out, 'd', id.digest, 16);
    add(out, 'v', id.version, 16);
    return out;
}

Result<std::optional<JobIdentity>> decode_identity(std::string_view text) {
    // The identity is the comment's word that starts with "tandem:".
    std::size_t at = std::string_view::npos;
    for (std::size_t from = 0; from < text.size();) {
        const auto found = text.find(k_any_version, from);
        if (found == std::string_view::npos) {
            break;
        }
        if (found == 0 || text[found - 1] == ' ') {
            at = found;
            break;
        }
        from = found + 1;
    }
    if (at == std::string_view::npos) {
        return std::optional<JobIdentity>();
    }
    std::string_view word = text.substr(at);
    word = word.substr(0, word.find(' '));
    if (word.size() > k_max_identity) {
        return fail(ErrorKind::remote, fmt::format("identity: longer than {} bytes", k_max_identity));
    }
    if (!word.starts_with(k_prefix)) {
        return fail(ErrorKind::remote, "identity: not version 1 of the encoding (this tandem reads only 1)");
    }
    JobIdentity id;
    std::string seen;
    std::string_view rest = word.substr(k_prefix.size());
    while (!rest.empty()) {
        const auto end = std::min(rest.find(';'), rest.size());
        const std::string_view pair = rest.substr(0, end);
        rest.remove_prefix(std::min(end + 1, rest.size()));
        if (pair.size() < 2 || pair[1] != '=') {
            return fail(ErrorKind::remote, "identity: a field is not key=value");
        }
        const char key = pair[0];
        if (seen.find(key) != std::string::npos) {
            return fail(ErrorKind::remote, fmt::format("identity: '{}' is given twice", shown(key)));
        }
        seen += key;
        auto value = unescape(pair.substr(2), key);
        if (!value) {
            return tl::unexpected(value.error());
        }
        switch (key) {
        case 't':
            id.token = std::move(*value);
            break;
        case 'n':
            id.name = std::move(*value);
            break;
        case 'g':
            id.group = std::move(*value);
            break;
        case 'm':
            id.member = std::move(*value);
            break;
        case 'e': {
            int n = -1;
            const auto* first = value->data();
            const auto* last = first + value->size();
            if (auto [p, ec] = std::from_chars(first, last, n); ec != std::errc() || p != last || n < 0) {
                return fail(ErrorKind::remote, "identity: the sweep element is not a whole number");
            }
            id.element = n;
            break;
        }
        case 'u':
            id.user = std::move(*value);
            break;
        case 'h':
            id.host = std::move(*value);
            break;
        case 'd':
            id.digest = std::move(*value);
            break;
        case 'v':
            id.version = std::move(*value);
            break;
        default:
            break; // a key a newer tandem writes
        }
    }
    if (!is_token(id.token)) {
        return fail(ErrorKind::remote, "identity: no valid submit token");
    }
    if (!id.group.empty() && !is_token(id.group)) {
        return fail(ErrorKind::remote, "identity: the group's token is not valid");
    }
    return std::optional<JobIdentity>(std::move(id));
}

} // namespace tandem
