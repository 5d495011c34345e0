#pragma once
// WebSocket (RFC 6455), the client side: framing (pure, bounded) and a live connection behind a small
// interface. Kubernetes' exec and attach channels run on it (k8s/k8s_exec.cpp). A message larger than
// the reader's limit, a reserved opcode, a masked server frame or a fragmented control frame is a
// protocol error, never an allocation the server chose.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace tandem::net {

namespace ws_op {
inline constexpr int continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10;
}

struct WebSocketMessage {
    int opcode = ws_op::binary; // text, binary, close, ping or pong (continuations are joined)
    std::string payload;
};

// One client frame (FIN set, masked with `mask_key`, as a client must).
std::string websocket_frame(int opcode, std::string_view payload, std::uint32_t mask_key);

// The Sec-WebSocket-Accept a server must answer to `key`.
std::string websocket_accept(std::string_view key);

// Takes bytes as they arrive and hands out whole messages.
class WebSocketReader {
public:
    explicit WebSocketReader(std::size_t max_message = 16 * 1024 * 1024) : m_max(max_message) {}
    void feed(std::string_view bytes) { m_buffer.append(bytes); }
    // The next whole message, nullopt when more bytes are needed, or a protocol error (one line).
    Result<std::optional<WebSocketMessage>> next();

private:
    std::string m_buffer;
    std::size_t m_max;
    std::optional<WebSocketMessage> m_partial; // a fragmented data message being joined
};

// A live connection (made by HttpClient::open_websocket).
class WebSocket {
public:
    virtual ~WebSocket() = default;
    virtual const std::string& protocol() const = 0; // the subprotocol the server chose
    virtual int fd() const = 0;                       // to poll for readability
    // Sends one message (blocking, bounded by the connection's I/O timeout).
    virtual Status send(int opcode, std::string_view payload) = 0;
    // Reads what has arrived without waiting; whole messages are appended to `out`. False once the
    // server has closed the connection.
    virtual Result<bool> receive(std::vector<WebSocketMessage>& out) = 0;
};

} // namespace tandem::net
