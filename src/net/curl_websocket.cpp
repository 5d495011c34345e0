// CurlHttpClient::open_websocket: libcurl makes the connection (TCP, proxy CONNECT, TLS with the client's
// CA and client certificate: CURLOPT_CONNECT_ONLY), then tandem speaks HTTP/1.1's upgrade and RFC 6455
// framing over it with curl_easy_send/recv. Debian 12's libcurl (7.88) has no WebSocket API of its own.

#include <poll.h>

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "net/curl_exchange.hpp"
#include "net/http_client.hpp"

namespace tandem::net {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000));
}

std::string lower(std::string s) {
    for (auto& c : s) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

class CurlWebSocket final : public WebSocket {
public:
    CurlWebSocket(CURL* handle, int fd, std::string who, std::chrono::milliseconds io_timeout)
        : m_handle(handle), m_fd(fd), m_who(std::move(who)), m_io_timeout(io_timeout), m_rng(std::random_device{}()) {}
    ~CurlWebSocket() override { curl().easy_cleanup(m_handle); }

    const std::string& protocol() const override { return m_protocol; }
    int fd() const override { return m_fd; }

    Status send_raw(std::string_view bytes) {
        const auto deadline = Clock::now() + m_io_timeout;
        while (!bytes.empty()) {
            std::size_t sent = 0;
            const CURLcode rc = curl().easy_send(m_handle, bytes.data(), bytes.size(), &sent);
            if (rc == CURLE_AGAIN) {
                pollfd p{m_fd, POLLOUT, 0};
                if (::poll(&p, 1, remaining_ms(deadline)) <= 0) {
                    return fail(ErrorKind::timeout, m_who + ": the connection took nothing before the timeout");
                }
                continue;
            }
            if (rc != CURLE_OK) {
                return fail(ErrorKind::unavailable, m_who + ": sending failed: " + curl().easy_strerror(rc));
            }
            bytes.remove_prefix(sent);
        }
        return {};
    }

    Status send(int opcode, std::string_view payload) override {
        return send_raw(websocket_frame(opcode, payload, static_cast<std::uint32_t>(m_rng())));
    }

    // Raw bytes without waiting: appended to `out`; false at the end of the connection.
    Result<bool> read_some(std::string& out) {
        char buf[64 * 1024];
        for (;;) {
            std::size_t got = 0;
            const CURLcode rc = curl().easy_recv(m_handle, buf, sizeof buf, &got);
            if (rc == CURLE_AGAIN) {
                return true;
            }
            if (rc != CURLE_OK) {
                return fail(ErrorKind::unavailable, m_who + ": reading failed: " + curl().easy_strerror(rc));
            }
            if (got == 0) {
                return false;
            }
            out.append(buf, got);
        }
    }

    Result<bool> receive(std::vector<WebSocketMessage>& out) override {
        std::string bytes;
        auto open = read_some(bytes);
        if (!open) {
            return tl::unexpected(open.error());
        }
        m_reader.feed(bytes);
        for (;;) {
            auto msg = m_reader.next();
            if (!msg) {
                Error e = msg.error();
                e.message = m_who + ": " + e.message;
                return tl::unexpected(e);
            }
            if (!*msg) {
                break;
            }
            if ((*msg)->opcode == ws_op::ping) {
                if (auto ok = send(ws_op::pong, (*msg)->payload); !ok) {
                    return tl::unexpected(ok.error());
                }
                continue;
            }
            out.push_back(std::move(**msg));
        }
        return *open;
    }

    // The upgrade exchange: the request, then the answer's head (whatever follows it is the first frames).
    Status handshake(const std::string& head_text, const std::vector<std::string>& protocols, const std::string& key,
                     HttpResponse* refused) {
        if (auto ok = send_raw(head_text); !ok) {
            return ok;
        }
        const auto deadline = Clock::now() + m_io_timeout;
        std::string got;
        std::size_t end = std::string::npos;
        while ((end = got.find("\r\n\r\n")) == std::string::npos) {
            if (got.size() > 64 * 1024) {
                return fail(ErrorKind::remote, m_who + ": an answer head over 64 KiB");
            }
            auto open = read_some(got);
            if (!open) {
                return tl::unexpected(open.error());
            }
            if (!*open) {
                return fail(ErrorKind::unavailable, m_who + ": the server closed the connection during the upgrade");
            }
            if (got.find("\r\n\r\n") != std::string::npos) {
                break;
            }
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, remaining_ms(deadline)) <= 0) {
                return fail(ErrorKind::timeout, m_who + ": no answer to the upgrade before the timeout");
            }
        }
        end = got.find("\r\n\r\n");
        const std::string head = got.substr(0, end);
        std::string rest = got.substr(end + 4);
        int status = 0;
        if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) {
            return fail(ErrorKind::remote, m_who + ": the answer to the upgrade is not HTTP");
        }
        status = std::atoi(head.c_str() + 9);
        Headers headers;
        for (std::size_t at = head.find("\r\n"); at != std::string::npos;) {
            const std::size_t next = head.find("\r\n", at + 2);
            const std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
            if (auto colon = line.find(':'); colon != std::string::npos) {
                std::string value = line.substr(colon + 1);
                value.erase(0, value.find_first_not_of(" \t"));
                headers.emplace_back(lower(line.substr(0, colon)), value);
            }
            at = next;
        }
        auto header = [&](const std::string& name) -> std::string {
            for (const auto& [k, v] : headers) {
                if (k == name) {
                    return v;
                }
            }
            return {};
        };
        if (status != 101) {
            if (refused) {
                refused->status = status;
                refused->headers = headers;
                refused->body = rest; // what arrived of it (a Status JSON is short)
                for (int i = 0; i < 20 && refused->body.size() < 65536; ++i) {
                    pollfd p{m_fd, POLLIN, 0};
                    if (::poll(&p, 1, 100) <= 0) {
                        break;
                    }
                    auto open = read_some(refused->body);
                    if (!open || !*open) {
                        break;
                    }
                }
            }
            return fail(ErrorKind::remote, fmt::format("{}: the upgrade was answered HTTP {}", m_who, status));
        }
        if (header("sec-websocket-accept") != websocket_accept(key)) {
            return fail(ErrorKind::remote, m_who + ": the upgrade's Sec-WebSocket-Accept is wrong");
        }
        m_protocol = header("sec-websocket-protocol");
        if (!protocols.empty() && std::find(protocols.begin(), protocols.end(), m_protocol) == protocols.end()) {
            return fail(ErrorKind::remote, fmt::format("{}: the server chose protocol '{}', which was not offered",
                                                       m_who, m_protocol.substr(0, 64)));
        }
        m_reader.feed(rest);
        return {};
    }

private:
    CURL* m_handle;
    int m_fd;
    std::string m_who;
    std::chrono::milliseconds m_io_timeout;
    std::mt19937 m_rng;
    std::string m_protocol;
    WebSocketReader m_reader;
};

} // namespace

namespace detail {

Result<std::unique_ptr<WebSocket>> open_websocket(const TlsSettings& tls, const HttpRequest& request,
                                                  const std::vector<std::string>& protocols, HttpResponse* refused) {
    const CurlApi* api = load_curl();
    if (!api) {
        return fail(ErrorKind::internal, "libcurl could not be loaded");
    }
    CURL* h = curl().easy_init();
    if (!h) {
        return fail(ErrorKind::internal, "curl_easy_init failed");
    }
    // scheme://host[:port]/path?query: libcurl connects to the origin; the path goes in our request line.
    const auto scheme_end = request.url.find("://");
    const auto path_at = scheme_end == std::string::npos ? std::string::npos : request.url.find('/', scheme_end + 3);
    const std::string origin = request.url.substr(0, path_at);
    const std::string target = path_at == std::string::npos ? "/" : request.url.substr(path_at);
    const std::string host = origin.substr(scheme_end == std::string::npos ? 0 : scheme_end + 3);
    std::string who = "websocket to " + origin;
    struct Owner { // the handle until `live` takes it
        CURL* h;
        ~Owner() {
            if (h) {
                curl().easy_cleanup(h);
            }
        }
    } owner{h};
    char errbuf[CURL_ERROR_SIZE] = {};
    CURLcode rc = configure_tls(h, tls);
    auto set = [&](CURLoption option, auto value) {
        if (rc == CURLE_OK) {
            rc = curl().easy_setopt(h, option, value);
        }
    };
    set(CURLOPT_URL, origin.c_str());
    set(CURLOPT_CONNECT_ONLY, 1L);
    set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1)); // ALPN: an upgrade is HTTP/1.1 only
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_ERRORBUFFER, errbuf);
    set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
    set(CURLOPT_TCP_KEEPALIVE, 1L);
    if (rc == CURLE_OK) {
        rc = curl().easy_perform(h);
    }
    if (rc != CURLE_OK) {
        return fail(ErrorKind::unavailable,
                    fmt::format("{}: {}", who, errbuf[0] ? std::string(errbuf) : curl().easy_strerror(rc)));
    }
    curl_socket_t sock = CURL_SOCKET_BAD;
    curl().easy_getinfo(h, CURLINFO_ACTIVESOCKET, &sock);
    if (sock == CURL_SOCKET_BAD) {
        return fail(ErrorKind::internal, who + ": libcurl gave no socket");
    }
    auto live = std::make_unique<CurlWebSocket>(h, static_cast<int>(sock), who,
                                                request.timeout.count() > 0 ? request.timeout
                                                                            : std::chrono::milliseconds(30'000));
    owner.h = nullptr; // `live` owns the handle now
    std::random_device rd;
    std::uint8_t raw[16];
    for (auto& b : raw) {
        b = static_cast<std::uint8_t>(rd());
    }
    static const char* k64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string key;
    for (int i = 0; i < 16; i += 3) {
        const std::uint32_t v = (std::uint32_t{raw[i]} << 16) | (i + 1 < 16 ? std::uint32_t{raw[i + 1]} << 8 : 0) |
                                (i + 2 < 16 ? std::uint32_t{raw[i + 2]} : 0);
        key += k64[(v >> 18) & 63];
        key += k64[(v >> 12) & 63];
        key += i + 1 < 16 ? k64[(v >> 6) & 63] : '=';
        key += i + 2 < 16 ? k64[v & 63] : '=';
    }
    std::string head = fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                   "Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\nUser-Agent: tandem\r\n",
                                   target, host, key);
    if (!protocols.empty()) {
        std::string list;
        for (const auto& p : protocols) {
            list += (list.empty() ? "" : ", ") + p;
        }
        head += "Sec-WebSocket-Protocol: " + list + "\r\n";
    }
    for (const auto& [name, value] : request.headers) {
        head += name + ": " + value + "\r\n";
    }
    head += "\r\n";
    if (auto ok = live->handshake(head, protocols, key, refused); !ok) {
        return tl::unexpected(ok.error());
    }
    return std::unique_ptr<WebSocket>(std::move(live));
}

} // namespace detail

} // namespace tandem::net
