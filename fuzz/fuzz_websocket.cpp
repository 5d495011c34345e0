// What a WebSocket server sends (pods/exec's channel stream), through net::WebSocketReader in pieces of
// the sizes the first input byte picks, as a socket would deliver them. Invariants: errors are one line;
// no message is longer than the reader's limit; the payload handed out is never more than was fed.

#include "fuzz_common.hpp"
#include "net/websocket.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::net;
    if (size == 0) {
        return 0;
    }
    const std::size_t piece = 1 + data[0] % 64;
    const auto bytes = fuzz::text(data + 1, size - 1);
    constexpr std::size_t limit = 4096;
    WebSocketReader reader(limit);
    std::size_t handed = 0;
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
        reader.feed(bytes.substr(at, piece));
        for (;;) {
            auto m = reader.next();
            if (!m) {
                fuzz::check_error_one_line(m, "websocket: error is one line");
                return 0;
            }
            if (!*m) {
                break;
            }
            if ((*m)->payload.size() > limit) {
                __builtin_trap();
            }
            handed += (*m)->payload.size();
            if (handed > bytes.size()) {
                __builtin_trap();
            }
        }
    }
    return 0;
}
