// WebSocket framing (RFC 6455): the handshake's accept value, client frames, and the reader's limits.

#include <catch2/catch.hpp>

#include "net/websocket.hpp"

using namespace tandem;
using namespace tandem::net;

namespace {

std::string server_frame(int opcode, const std::string& payload, bool fin = true) {
    std::string out;
    out.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
    if (payload.size() < 126) {
        out.push_back(static_cast<char>(payload.size()));
    } else if (payload.size() <= 0xffff) {
        out.push_back(static_cast<char>(126));
        out.push_back(static_cast<char>(payload.size() >> 8));
        out.push_back(static_cast<char>(payload.size() & 0xff));
    } else {
        out.push_back(static_cast<char>(127));
        for (int i = 7; i >= 0; --i) {
            out.push_back(static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> (8 * i)) & 0xff));
        }
    }
    return out + payload;
}

} // namespace

TEST_CASE("websocket: the accept value of RFC 6455's example") {
    CHECK(websocket_accept("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("websocket: client frames are masked, with 7, 16 and 64-bit lengths") {
    const std::string small = websocket_frame(ws_op::binary, "\x01hi", 0x01020304);
    REQUIRE(small.size() == 2 + 4 + 3);
    CHECK(static_cast<unsigned char>(small[0]) == 0x82);
    CHECK(static_cast<unsigned char>(small[1]) == (0x80 | 3));
    CHECK(small[6] == static_cast<char>(0x01 ^ 0x01));
    CHECK(small[7] == static_cast<char>('h' ^ 0x02));
    const std::string mid = websocket_frame(ws_op::binary, std::string(300, 'x'), 7);
    CHECK(static_cast<unsigned char>(mid[1]) == (0x80 | 126));
    CHECK(mid.size() == 4 + 4 + 300);
    const std::string big = websocket_frame(ws_op::binary, std::string(70000, 'x'), 7);
    CHECK(static_cast<unsigned char>(big[1]) == (0x80 | 127));
    CHECK(big.size() == 10 + 4 + 70000);
}

TEST_CASE("websocket: the reader joins fragments, passes control frames, and waits for whole frames") {
    WebSocketReader r;
    const std::string bytes = server_frame(ws_op::binary, "\x01par", false) + server_frame(ws_op::ping, "p") +
                              server_frame(ws_op::continuation, "tial") + server_frame(ws_op::text, std::string(200, 'y'));
    for (char c : bytes.substr(0, 3)) { // byte by byte: nothing until a frame is whole
        r.feed(std::string(1, c));
        auto none = r.next();
        REQUIRE(none);
        CHECK_FALSE(*none);
    }
    r.feed(bytes.substr(3));
    auto ping = r.next();
    REQUIRE(ping);
    REQUIRE(*ping);
    CHECK((*ping)->opcode == ws_op::ping);
    auto joined = r.next();
    REQUIRE((joined && *joined));
    CHECK((*joined)->opcode == ws_op::binary);
    CHECK((*joined)->payload == "\x01partial");
    auto text = r.next();
    REQUIRE((text && *text));
    CHECK((*text)->payload.size() == 200);
}

TEST_CASE("websocket: masked, reserved, oversized and bad control frames are one-line errors") {
    auto error_of = [](const std::string& bytes, std::size_t limit = 1024) {
        WebSocketReader r(limit);
        r.feed(bytes);
        auto m = r.next();
        REQUIRE_FALSE(m);
        CHECK(m.error().message.find('\n') == std::string::npos);
        return m.error().message;
    };
    CHECK_THAT(error_of(std::string("\x82\x81mask", 6) + "x"), Catch::Contains("masked"));
    CHECK_THAT(error_of(std::string("\xc2\x00", 2)), Catch::Contains("reserved bits"));
    CHECK_THAT(error_of(std::string("\x83\x00", 2)), Catch::Contains("reserved opcode 3"));
    CHECK_THAT(error_of(server_frame(ws_op::binary, std::string(2000, 'z'))), Catch::Contains("over 1024 bytes"));
    // A 64-bit length the server chose is refused before any allocation.
    CHECK_THAT(error_of(std::string("\x82\x7f\x7f\xff\xff\xff\xff\xff\xff\xff", 10)), Catch::Contains("over 1024"));
    CHECK_THAT(error_of(server_frame(ws_op::ping, "x", false)), Catch::Contains("control frame"));
    CHECK_THAT(error_of(server_frame(ws_op::continuation, "x")), Catch::Contains("no message to continue"));
    CHECK_THAT(error_of(server_frame(ws_op::binary, "a", false) + server_frame(ws_op::binary, "b")),
               Catch::Contains("before the last one ended"));
}
