#include "net/ssh_keys.hpp"

#include <array>
#include <cstdint>
#include <utility>

namespace tandem::net {

namespace {

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// A big-endian uint32 length and that many bytes, from the front of `in`; nullopt if truncated.
std::optional<std::string_view> take_string(std::string_view& in) {
    if (in.size() < 4) {
        return std::nullopt;
    }
    std::uint32_t n = 0;
    for (int i = 0; i < 4; ++i) {
        n = (n << 8) | static_cast<unsigned char>(in[static_cast<std::size_t>(i)]);
    }
    in.remove_prefix(4);
    if (n > in.size()) {
        return std::nullopt;
    }
    auto out = in.substr(0, n);
    in.remove_prefix(n);
    return out;
}

} // namespace

std::string base64_encode(std::string_view bytes, bool pad) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        std::uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                          (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                          static_cast<unsigned char>(bytes[i + 2]);
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
        if (rest == 2) {
            v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
        }
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        if (rest == 2) {
            out += alphabet[(v >> 6) & 63];
        }
        if (pad) {
            out.append(rest == 1 ? 2 : 1, '=');
        }
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    bool ended = false;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            continue;
        }
        if (c == '=') {
            ended = true;
            continue;
        }
        auto pos = alphabet.find(c);
        if (pos == std::string_view::npos || ended) {
            return std::nullopt;
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(pos);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    return out;
}

std::string sha256_fingerprint(std::string_view digest) {
    return "SHA256:" + base64_encode(digest, false);
}

std::string ssh_key_type(std::string_view blob) {
    auto type = take_string(blob);
    return type ? std::string(*type) : std::string();
}

bool looks_like_private_key(std::string_view text) {
    return text.find("-----BEGIN ") != std::string_view::npos &&
           text.find("PRIVATE KEY-----") != std::string_view::npos;
}

namespace {

// The decoded body of an "openssh-key-v1" file, after the magic; nullopt for another format.
std::optional<std::string> openssh_key_body(std::string_view text) {
    constexpr std::string_view begin = "-----BEGIN OPENSSH PRIVATE KEY-----";
    constexpr std::string_view end = "-----END OPENSSH PRIVATE KEY-----";
    auto b = text.find(begin);
    if (b == std::string_view::npos) {
        return std::nullopt;
    }
    auto e = text.find(end, b);
    auto body = base64_decode(text.substr(
        b + begin.size(), e == std::string_view::npos ? std::string_view::npos : e - b - begin.size()));
    constexpr std::string_view magic{"openssh-key-v1\0", 15};
    if (!body || !std::string_view(*body).starts_with(magic)) {
        return std::nullopt;
    }
    return body->substr(magic.size());
}

} // namespace

std::string private_key_type(std::string_view text) {
    if (text.find("-----BEGIN RSA PRIVATE KEY-----") != std::string_view::npos) {
        return "ssh-rsa";
    }
    if (text.find("-----BEGIN EC PRIVATE KEY-----") != std::string_view::npos) {
        return "ecdsa";
    }
    auto body = openssh_key_body(text);
    if (!body) {
        return {};
    }
    std::string_view rest = *body;
    // cipher, kdf name, kdf options, key count, then the first public key.
    for (int i = 0; i < 3; ++i) {
        if (!take_string(rest)) {
            return {};
        }
    }
    if (rest.size() < 4) {
        return {};
    }
    rest.remove_prefix(4);
    auto pub = take_string(rest);
    return pub ? ssh_key_type(*pub) : std::string();
}

bool private_key_is_encrypted(std::string_view text) {
    if (text.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos ||
        text.find("BEGIN ENCRYPTED PRIVATE KEY") != std::string_view::npos) {
        return true;
    }
    auto body = openssh_key_body(text);
    if (!body) {
        return false;
    }
    std::string_view rest = *body;
    auto cipher = take_string(rest);
    return cipher && *cipher != "none";
}

int signal_number(std::string_view name) {
    static constexpr std::array<std::pair<std::string_view, int>, 15> table{{
        {"HUP", 1},
        {"INT", 2},
        {"QUIT", 3},
        {"ILL", 4},
        {"TRAP", 5},
        {"ABRT", 6},
        {"BUS", 7},
        {"FPE", 8},
        {"KILL", 9},
        {"USR1", 10},
        {"SEGV", 11},
        {"USR2", 12},
        {"PIPE", 13},
        {"ALRM", 14},
        {"TERM", 15},
    }};
    if (name.starts_with("SIG")) {
        name.remove_prefix(3);
    }
    for (const auto& [n, number] : table) {
        if (n == name) {
            return number;
        }
    }
    return 0;
}

} // namespace tandem::net
