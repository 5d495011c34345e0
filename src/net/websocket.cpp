#include "net/websocket.hpp"

#include <array>
#include <cstring>

#include <fmt/format.h>

namespace tandem::net {

namespace {

// SHA-1 (for the handshake's accept value only; nothing here relies on it for security).
std::array<std::uint8_t, 20> sha1(std::string_view data) {
    std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::string m(data);
    const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
    m.push_back(static_cast<char>(0x80));
    while (m.size() % 64 != 56) {
        m.push_back('\0');
    }
    for (int i = 7; i >= 0; --i) {
        m.push_back(static_cast<char>((bits >> (i * 8)) & 0xff));
    }
    auto rol = [](std::uint32_t v, int n) { return (v << n) | (v >> (32 - n)); };
    for (std::size_t block = 0; block < m.size(); block += 64) {
        std::uint32_t w[80];
        for (int i = 0; i < 16; ++i) {
            const auto* p = reinterpret_cast<const unsigned char*>(m.data() + block + 4 * i);
            w[i] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
        }
        for (int i = 16; i < 80; ++i) {
            w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        }
        std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; ++i) {
            std::uint32_t f, k;
            if (i < 20) {
                f = (b & c) | (~b & d), k = 0x5A827999;
            } else if (i < 40) {
                f = b ^ c ^ d, k = 0x6ED9EBA1;
            } else if (i < 60) {
                f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
            } else {
                f = b ^ c ^ d, k = 0xCA62C1D6;
            }
            const std::uint32_t t = rol(a, 5) + f + e + k + w[i];
            e = d, d = c, c = rol(b, 30), b = a, a = t;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    std::array<std::uint8_t, 20> out{};
    for (int i = 0; i < 20; ++i) {
        out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(h[i / 4] >> (24 - 8 * (i % 4)));
    }
    return out;
}

std::string base64(const std::uint8_t* data, std::size_t n) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < n; i += 3) {
        const std::uint32_t v = (std::uint32_t{data[i]} << 16) | (i + 1 < n ? std::uint32_t{data[i + 1]} << 8 : 0) |
                                (i + 2 < n ? std::uint32_t{data[i + 2]} : 0);
        out += k[(v >> 18) & 63];
        out += k[(v >> 12) & 63];
        out += i + 1 < n ? k[(v >> 6) & 63] : '=';
        out += i + 2 < n ? k[v & 63] : '=';
    }
    return out;
}

} // namespace

std::string websocket_accept(std::string_view key) {
    const auto digest = sha1(std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    return base64(digest.data(), digest.size());
}

std::string websocket_frame(int opcode, std::string_view payload, std::uint32_t mask_key) {
    std::string out;
    out.push_back(static_cast<char>(0x80 | (opcode & 0x0f)));
    const std::size_t n = payload.size();
    if (n < 126) {
        out.push_back(static_cast<char>(0x80 | n));
    } else if (n <= 0xffff) {
        out.push_back(static_cast<char>(0x80 | 126));
        out.push_back(static_cast<char>(n >> 8));
        out.push_back(static_cast<char>(n & 0xff));
    } else {
        out.push_back(static_cast<char>(0x80 | 127));
        for (int i = 7; i >= 0; --i) {
            out.push_back(static_cast<char>((static_cast<std::uint64_t>(n) >> (8 * i)) & 0xff));
        }
    }
    const char mask[4] = {static_cast<char>(mask_key >> 24), static_cast<char>(mask_key >> 16),
                          static_cast<char>(mask_key >> 8), static_cast<char>(mask_key)};
    out.append(mask, 4);
    const std::size_t at = out.size();
    out.append(payload);
    for (std::size_t i = 0; i < n; ++i) {
        out[at + i] = static_cast<char>(out[at + i] ^ mask[i % 4]);
    }
    return out;
}

Result<std::optional<WebSocketMessage>> WebSocketReader::next() {
    for (;;) {
        if (m_buffer.size() < 2) {
            return std::nullopt;
        }
        const auto b0 = static_cast<unsigned char>(m_buffer[0]);
        const auto b1 = static_cast<unsigned char>(m_buffer[1]);
        const bool fin = (b0 & 0x80) != 0;
        const int op = b0 & 0x0f;
        if ((b0 & 0x70) != 0) {
            return fail(ErrorKind::remote, "websocket: a frame with reserved bits set (no extension was agreed)");
        }
        if (b1 & 0x80) {
            return fail(ErrorKind::remote, "websocket: the server sent a masked frame");
        }
        if (!(op <= 2 || (op >= 8 && op <= 10))) {
            return fail(ErrorKind::remote, fmt::format("websocket: reserved opcode {}", op));
        }
        std::size_t head = 2;
        std::uint64_t n = b1 & 0x7f;
        if (n == 126) {
            if (m_buffer.size() < 4) {
                return std::nullopt;
            }
            n = (std::uint64_t{static_cast<unsigned char>(m_buffer[2])} << 8) | static_cast<unsigned char>(m_buffer[3]);
            head = 4;
        } else if (n == 127) {
            if (m_buffer.size() < 10) {
                return std::nullopt;
            }
            n = 0;
            for (int i = 0; i < 8; ++i) {
                n = (n << 8) | static_cast<unsigned char>(m_buffer[2 + static_cast<std::size_t>(i)]);
            }
            head = 10;
        }
        const bool control = op >= 8;
        if (control && (!fin || n > 125)) {
            return fail(ErrorKind::remote, "websocket: a control frame that is fragmented or over 125 bytes");
        }
        const std::size_t joined = m_partial ? m_partial->payload.size() : 0;
        if (n > m_max || joined + n > m_max) {
            return fail(ErrorKind::remote, fmt::format("websocket: a message over {} bytes", m_max));
        }
        if (m_buffer.size() < head + n) {
            return std::nullopt;
        }
        std::string payload = m_buffer.substr(head, static_cast<std::size_t>(n));
        m_buffer.erase(0, head + static_cast<std::size_t>(n));
        if (control) {
            return WebSocketMessage{op, std::move(payload)};
        }
        if (op == ws_op::continuation) {
            if (!m_partial) {
                return fail(ErrorKind::remote, "websocket: a continuation frame with no message to continue");
            }
            m_partial->payload += payload;
        } else {
            if (m_partial) {
                return fail(ErrorKind::remote, "websocket: a new message before the last one ended");
            }
            m_partial = WebSocketMessage{op, std::move(payload)};
        }
        if (fin) {
            auto done = std::move(*m_partial);
            m_partial.reset();
            return std::optional<WebSocketMessage>(std::move(done));
        }
    }
}

} // namespace tandem::net
