#pragma once
// The HTTP seam. Adapters (Slurm REST, Kubernetes) talk to `HttpClient`; unit tests substitute a recording
// fake, and the real thing is `CurlHttpClient`. Every failure comes back as a classified `Error` whose
// message is one line, names host:port, and has had every credential header value redacted.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "net/websocket.hpp"

namespace tandem::net {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The largest body a request collects whole (HttpRequest::max_body_bytes), 128 MiB: an answer larger than
// that is an error, not a reason to run the machine out of memory. Streams are not capped (their consumer
// sees each piece); error bodies are cut to their first 64 KiB either way.
inline constexpr std::size_t k_default_max_body = std::size_t{128} * 1024 * 1024;

struct HttpRequest {
    std::string method = "GET";
    std::string url;
    Headers headers;          // sent as given; values of credential headers are treated as secrets
    std::string body;         // sent as is for any method when non-empty (and always for POST)
    std::string content_type; // adds a Content-Type header when non-empty
    // Whole exchange; 0 = none (log follow, watch). Retries share a budget of twice this (see retry_budget
    // in http_policy.hpp): the request returns within 2 x timeout whatever the server does.
    std::chrono::milliseconds timeout{30'000};
    std::chrono::milliseconds connect_timeout{10'000}; // TCP + TLS handshake
    // Safe to send twice. Only idempotent requests are retried after they may have reached the server;
    // any request is retried when it failed before being sent (connection refused, DNS, TLS handshake).
    bool idempotent = false;
    // Statuses handed back as a response instead of an error (e.g. 404 when absence is an answer,
    // 409 on create, 410 on a watch). 2xx always are.
    std::vector<int> pass_statuses;
    // request(): a delivered body over this many bytes ends the exchange with a `remote` error.
    std::size_t max_body_bytes = k_default_max_body;
};

struct HttpResponse {
    int status = 0;
    Headers headers; // names lowercased, in arrival order
    std::string body;

    // The first value of a header (name in any case), or nothing.
    std::optional<std::string_view> header(std::string_view name) const;
};

// Whether requests to this URL need libcurl (https, a proxy from the environment, user info in the URL).
// Plain http:// does not: CurlHttpClient carries it with its own HTTP/1.1 exchange.
bool needs_libcurl(std::string_view url);

// Starts loading and initialising libcurl on a detached helper thread, once, so the ~7 ms of dynamic
// linking and TLS setup overlap reading the task and the job store. The CLI calls it when a configured
// cluster will need libcurl. A no-op after the first call (and when libcurl is missing: the first request
// reports that).
void start_libcurl_preload();

class HttpClient {
public:
    virtual ~HttpClient() = default;

    // One exchange; the response body is collected whole. Non-2xx statuses not in pass_statuses are errors.
    virtual Result<HttpResponse> request(const HttpRequest& request) = 0;

    // Delivers the body in pieces as they arrive (chunked log follow, watch events). `head`, when given, is
    // filled with status and headers before the first piece. `on_chunk` returning false ends the stream
    // cleanly (the result is success). A stream is retried only while no piece has been delivered.
    virtual Status stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                          HttpResponse* head) = 0;

    // Upgrades a GET of `request` to a WebSocket offering `protocols` (Sec-WebSocket-Protocol); an
    // answer other than 101 is an error carrying its status (`status_out`) and body.
    virtual Result<std::unique_ptr<WebSocket>> open_websocket(const HttpRequest& request,
                                                              const std::vector<std::string>& protocols,
                                                              HttpResponse* refused = nullptr) {
        (void)request;
        (void)protocols;
        (void)refused;
        return fail(ErrorKind::internal, "this HTTP client cannot open a WebSocket");
    }
};

// Trust and identity for https. PEM data in memory (kubeconfig's *-data fields) is passed to libcurl as
// blobs, so no secret is ever written to a temporary file.
struct TlsSettings {
    std::string ca_file;
    std::string ca_pem;
    std::string client_cert_file;
    std::string client_key_file;
    std::string client_cert_pem;
    std::string client_key_pem;
    bool insecure_skip_verify = false;
};

struct RetryPolicy {
    int max_attempts = 3; // including the first
    std::chrono::milliseconds base_delay{200};
    std::chrono::milliseconds max_delay{5'000};
    // A Retry-After (429/503) up to this long is waited for exactly; a longer one ends the retries.
    std::chrono::milliseconds max_retry_after{10'000};
    // How to wait between attempts; empty means std::this_thread::sleep_for. Tests inject a recorder.
    std::function<void(std::chrono::milliseconds)> sleep;
};

// Which code carries a request. `automatic`: plain http:// without a proxy takes tandem's own HTTP/1.1
// exchange (net/plain_http.hpp: libcurl is not even loaded for it), the rest libcurl. `libcurl`: always
// libcurl (tests run the same cases through both).
enum class HttpTransport { automatic, libcurl };

// The real HttpClient: libcurl (loaded on the first request that needs it), and for plain http:// the
// lighter exchange above. Connections are kept and reused, so sequential requests to one server share one
// connection (one TLS handshake per invocation). Safe to call from several threads: a call takes an idle
// connection or makes a new one, so a long stream does not block other requests.
class CurlHttpClient final : public HttpClient {
public:
    explicit CurlHttpClient(TlsSettings tls = {}, RetryPolicy retry = {},
                            HttpTransport transport = HttpTransport::automatic);
    ~CurlHttpClient() override;
    CurlHttpClient(const CurlHttpClient&) = delete;
    CurlHttpClient& operator=(const CurlHttpClient&) = delete;

    Result<HttpResponse> request(const HttpRequest& request) override;
    Status stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                  HttpResponse* head) override;
    Result<std::unique_ptr<WebSocket>> open_websocket(const HttpRequest& request,
                                                      const std::vector<std::string>& protocols,
                                                      HttpResponse* refused = nullptr) override;

    // New connections opened so far (by libcurl and the plain exchange): proves reuse in tests.
    long connections_opened() const;

    // One line per attempt (method, host:port/path, request headers, outcome, time, new or reused
    // connection), credential values redacted. For --verbose style output; set before the first call.
    void set_debug_sink(std::function<void(std::string_view)> sink);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace tandem::net
