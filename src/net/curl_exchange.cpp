#include "net/curl_exchange.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <exception>
#include <optional>

#include <fmt/format.h>

namespace tandem::net::detail {

namespace {

// Bodies of refused streams are kept only for the error message.
constexpr std::size_t k_max_error_body = std::size_t{64} * 1024;

// State the libcurl callbacks share with the attempt.
struct Exchange {
    const HttpRequest* request = nullptr;
    const ChunkSink* on_chunk = nullptr;
    HttpResponse* head = nullptr;
    HttpResponse response;
    std::string reason;
    std::string error_body;
    bool head_published = false;
    bool consumer_stopped = false;
    bool data_delivered = false;
    bool error_body_full = false; // an error answer's first 64 KiB are kept; the rest is not read
    bool too_large = false;       // a delivered body over request->max_body_bytes
    std::optional<std::uint64_t> announced; // its Content-Length, when that said so
    CURL* handle = nullptr;
    std::string consumer_error;

    void publish_head() {
        if (head != nullptr && !head_published) {
            head->status = response.status;
            head->headers = response.headers;
            head->body.clear();
        }
        head_published = true;
    }
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) noexcept {
    auto* ex = static_cast<Exchange*>(user);
    const std::size_t n = size * count;
    const std::string_view line = trim_header_value(std::string_view(data, n));
    try {
        if (line.starts_with("HTTP/")) { // a new response (after 100 Continue): forget the previous one
            ex->response.headers.clear();
            const auto sp = line.find(' ');
            const std::string_view rest = sp == std::string_view::npos ? "" : line.substr(sp + 1);
            ex->response.status = rest.size() >= 3 ? std::atoi(std::string(rest.substr(0, 3)).c_str()) : 0;
            ex->reason = rest.size() > 4 ? std::string(trim_header_value(rest.substr(4))) : std::string();
        } else if (const auto colon = line.find(':'); colon != std::string_view::npos && colon > 0) {
            std::string name(trim_header_value(line.substr(0, colon)));
            std::transform(name.begin(), name.end(), name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            ex->response.headers.emplace_back(std::move(name),
                                              std::string(trim_header_value(line.substr(colon + 1))));
        }
    } catch (...) {
        return 0; // out of memory: abort the transfer
    }
    return n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) noexcept {
    auto* ex = static_cast<Exchange*>(user);
    const std::size_t n = size * count;
    try {
        // Returning less than n aborts the transfer (CURLE_WRITE_ERROR); the flags say why.
        if (!deliverable(ex->response.status, ex->request->pass_statuses)) {
            std::string& kept = ex->on_chunk == nullptr ? ex->response.body : ex->error_body;
            const std::size_t room = k_max_error_body - std::min(k_max_error_body, kept.size());
            kept.append(data, std::min(n, room));
            ex->error_body_full = n > room;
            return ex->error_body_full ? 0 : n;
        }
        if (ex->on_chunk == nullptr) {
            if (ex->response.body.empty()) {
                curl_off_t length = -1;
                const bool known = ex->handle != nullptr &&
                                   curl().easy_getinfo(ex->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                                                       &length) == CURLE_OK;
                if (known && length > 0) {
                    if (body_over_limit(*ex->request, 0, static_cast<std::uint64_t>(length))) {
                        ex->announced = static_cast<std::uint64_t>(length);
                        ex->too_large = true;
                        return 0; // refused before the rest of it is read
                    }
                    ex->response.body.reserve(static_cast<std::size_t>(length));
                }
            }
            if (body_over_limit(*ex->request, ex->response.body.size() + n)) {
                ex->too_large = true;
                return 0;
            }
            ex->response.body.append(data, n);
            return n;
        }
        ex->publish_head();
        ex->data_delivered = true;
        if (!(*ex->on_chunk)(std::string_view(data, n))) {
            ex->consumer_stopped = true;
            return 0; // makes curl_easy_perform return CURLE_WRITE_ERROR, which we treat as a clean end
        }
        return n;
    } catch (const std::exception& e) {
        ex->consumer_error = e.what();
    } catch (...) {
        ex->consumer_error = "unknown exception";
    }
    return 0;
}

class HeaderList {
public:
    HeaderList() = default;
    HeaderList(const HeaderList&) = delete;
    HeaderList& operator=(const HeaderList&) = delete;
    ~HeaderList() { curl().slist_free_all(m_list); }

    bool add(const std::string& line) {
        curl_slist* next = curl().slist_append(m_list, line.c_str());
        if (next == nullptr) {
            return false;
        }
        m_list = next;
        return true;
    }
    curl_slist* get() const { return m_list; }

private:
    curl_slist* m_list = nullptr;
};

// Trust and identity. Given a CA, trust only it (not the system bundle), as kubectl does.

CURLcode configure(CURL* h, const HttpRequest& req, Exchange& ex, HeaderList& headers, char* errbuf) {
    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption option, auto value) {
        if (rc == CURLE_OK) {
            rc = curl().easy_setopt(h, option, value);
        }
    };
    set(CURLOPT_URL, req.url.c_str());
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_ERRORBUFFER, errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
    set(CURLOPT_PROTOCOLS_STR, "http,https");
#else
    set(CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    set(CURLOPT_FOLLOWLOCATION, 0L);
    set(CURLOPT_TCP_KEEPALIVE, 1L);
    if (!loopback_url(req.url)) {
        set(CURLOPT_ACCEPT_ENCODING, ""); // whatever this libcurl can decode
    }
    set(CURLOPT_USERAGENT, "tandem");
    set(CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
    // libcurl silently resends a request whose reused connection died before any answer came back. For
    // a submit that may already have been acted on that is a second job, so a request that must not be
    // repeated gets a fresh connection, where libcurl never retries on its own.
    set(CURLOPT_FRESH_CONNECT, req.idempotent ? 0L : 1L);
    set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout.count()));
    set(CURLOPT_HEADERFUNCTION, &on_header);
    set(CURLOPT_HEADERDATA, static_cast<void*>(&ex));
    set(CURLOPT_WRITEFUNCTION, &on_body);
    set(CURLOPT_WRITEDATA, static_cast<void*>(&ex));
    if (req.method == "HEAD") {
        set(CURLOPT_NOBODY, 1L);
    } else if (req.method == "POST" || !req.body.empty()) {
        set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
        set(CURLOPT_POSTFIELDS, req.body.data());
    }
    if (req.method != "GET" && req.method != "POST" && req.method != "HEAD") {
        set(CURLOPT_CUSTOMREQUEST, req.method.c_str());
    } else if (req.method == "GET" && !req.body.empty()) {
        set(CURLOPT_CUSTOMREQUEST, "GET");
    }
    bool ok = headers.add("Expect:"); // no 100-continue round trip before bodies
    for (const auto& [name, value] : req.headers) {
        const std::string_view v =
            trim_header_value(value); // a token read from a file often ends in a newline
        ok = ok && headers.add(v.empty() ? fmt::format("{};", name) : fmt::format("{}: {}", name, v));
    }
    if (!req.content_type.empty()) {
        ok = ok && headers.add(fmt::format("Content-Type: {}", req.content_type));
    }
    set(CURLOPT_HTTPHEADER, headers.get());
    return ok ? rc : CURLE_OUT_OF_MEMORY;
}

AttemptFailure transport_failure(CURLcode code, const HttpRequest& req, std::string_view detail,
                                 bool request_sent) {
    const UrlTarget t = parse_target(req.url);
    const std::string what = fmt::format("{} {}", req.method, t.path);
    auto failure = [&](ErrorKind kind, std::string message, bool sent, std::string hint = {}) {
        return AttemptFailure{Error{kind, std::move(message), std::move(hint)}, sent, false, std::nullopt};
    };
    switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
        return failure(ErrorKind::unavailable,
                       fmt::format("cannot reach {} ({}): {}", t.host_port, what, detail), false);
    case CURLE_OPERATION_TIMEDOUT:
        if (!request_sent) { // whichever limit is shorter ended the connect phase
            const auto limit =
                req.timeout.count() > 0 ? std::min(req.timeout, req.connect_timeout) : req.connect_timeout;
            return failure(
                ErrorKind::timeout,
                fmt::format("cannot connect to {} ({}) within {} ms", t.host_port, what, limit.count()),
                false);
        }
        return failure(
            ErrorKind::timeout,
            fmt::format("{} did not answer {} within {} ms", t.host_port, what, req.timeout.count()), true);
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return failure(ErrorKind::unavailable,
                       fmt::format("connection to {} broke during {}: {}", t.host_port, what, detail), true);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        return failure(ErrorKind::config,
                       fmt::format("TLS with {} failed ({}): {}", t.host_port, what, detail), false,
                       "check the cluster's CA certificate and client certificate/key settings");
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return failure(ErrorKind::config, fmt::format("bad URL for {}: {}", t.host_port, detail), false);
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
        return failure(ErrorKind::remote,
                       fmt::format("{} sent an unreadable answer to {}: {}", t.host_port, what, detail),
                       true);
    default:
        return failure(ErrorKind::internal, fmt::format("{} to {} failed: {}", what, t.host_port, detail),
                       true);
    }
}

} // namespace

// There a compressed answer only costs time: the server gzips a 900 KB pod list in ~7 ms that the loopback
// carries in well under 1 ms.
bool loopback_url(std::string_view url) {
    const auto scheme = url.find("://");
    if (scheme == std::string_view::npos) {
        return false;
    }
    std::string_view rest = url.substr(scheme + 3);
    rest = rest.substr(0, rest.find_first_of("/?#"));
    if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
        rest = rest.substr(at + 1);
    }
    if (rest.rfind("[::1]", 0) == 0) {
        return true;
    }
    rest = rest.substr(0, rest.find(':'));
    const bool ipv4 = !rest.empty() && rest.find_first_not_of("0123456789.") == std::string_view::npos;
    return rest == "localhost" || (ipv4 && rest.rfind("127.", 0) == 0);
}

AttemptResult perform_attempt(CURL* h, const TlsSettings& tls, const HttpRequest& request,
                              const ChunkSink* on_chunk, HttpResponse* head,
                              const std::vector<std::string>& secrets) {
    AttemptResult result;
    Exchange ex;
    ex.request = &request;
    ex.handle = h;
    ex.on_chunk = on_chunk;
    ex.head = head;
    HeaderList headers;
    std::array<char, CURL_ERROR_SIZE> errbuf{};

    if (auto name = malformed_header(request)) {
        result.failure =
            attempt_failure(ErrorKind::config,
                            fmt::format("header '{}' for {} is malformed (empty name, colon or line break)",
                                        *name, parse_target(request.url).host_port),
                            false);
        return result;
    }
    curl().easy_reset(h);
    if (CURLcode rc = configure(h, request, ex, headers, errbuf.data()); rc != CURLE_OK) {
        result.failure =
            attempt_failure(ErrorKind::internal,
                            fmt::format("cannot set up {} {}: {}", request.method,
                                        parse_target(request.url).host_port, curl().easy_strerror(rc)),
                            false);
        return result;
    }
    if (CURLcode rc = configure_tls(h, tls); rc != CURLE_OK) {
        result.failure =
            attempt_failure(ErrorKind::config,
                            fmt::format("this libcurl cannot use the TLS settings for {}: {}",
                                        parse_target(request.url).host_port, curl().easy_strerror(rc)),
                            false);
        return result;
    }

    const auto start = std::chrono::steady_clock::now();
    const CURLcode code = curl().easy_perform(h);
    result.elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    long connects = 0, request_size = 0, status = 0;
    curl_off_t pretransfer_us = 0;
    curl().easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    curl().easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_size);
    curl().easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
    curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    // Counted as sent once the connection was ready to send: a doubtful case must not be repeated.
    const bool request_sent = request_size > 0 || pretransfer_us > 0;
    result.new_connections = connects;
    if (status != 0) {
        ex.response.status = static_cast<int>(status);
    }
    if (head != nullptr && ex.response.status != 0) {
        ex.publish_head();
    }

    if (!ex.consumer_error.empty()) {
        result.failure =
            attempt_failure(ErrorKind::internal,
                            "the consumer of a stream from " + parse_target(request.url).host_port +
                                " failed: " + ex.consumer_error,
                            true, true);
    } else if (ex.consumer_stopped) {
        // A clean end chosen by the consumer; curl reports it as a write error.
    } else if (ex.too_large) {
        result.failure = body_too_large(request, ex.announced);
    } else if (code != CURLE_OK && !ex.error_body_full) {
        const std::string detail =
            errbuf[0] != '\0' ? std::string(errbuf.data()) : curl().easy_strerror(code);
        result.failure = transport_failure(code, request, detail, request_sent);
        result.failure->data_delivered = ex.data_delivered;
    } else if (!deliverable(ex.response.status, request.pass_statuses)) {
        const std::string& body = on_chunk != nullptr ? ex.error_body : ex.response.body;
        result.failure = refused_status(request, ex.response, ex.reason, body, secrets);
    }
    result.response = std::move(ex.response);
    return result;
}

CURLcode configure_tls(CURL* h, const TlsSettings& tls) {
    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption option, auto value) {
        if (rc == CURLE_OK) {
            rc = curl().easy_setopt(h, option, value);
        }
    };
    auto blob_of = [](const std::string& pem) {
        return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_NOCOPY}; // lives in the client
    };
    if (!tls.ca_file.empty() || !tls.ca_pem.empty()) {
        set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
        set(CURLOPT_CAINFO, tls.ca_file.empty() ? static_cast<const char*>(nullptr) : tls.ca_file.c_str());
    }
    curl_blob ca = blob_of(tls.ca_pem), cert = blob_of(tls.client_cert_pem),
              key = blob_of(tls.client_key_pem);
    if (!tls.ca_pem.empty()) {
        set(CURLOPT_CAINFO_BLOB, &ca);
    }
    if (!tls.client_cert_pem.empty()) {
        set(CURLOPT_SSLCERT_BLOB, &cert);
    } else if (!tls.client_cert_file.empty()) {
        set(CURLOPT_SSLCERT, tls.client_cert_file.c_str());
    }
    if (!tls.client_cert_pem.empty() || !tls.client_cert_file.empty()) {
        set(CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!tls.client_key_pem.empty()) {
        set(CURLOPT_SSLKEY_BLOB, &key);
    } else if (!tls.client_key_file.empty()) {
        set(CURLOPT_SSLKEY, tls.client_key_file.c_str());
    }
    if (!tls.client_key_pem.empty() || !tls.client_key_file.empty()) {
        set(CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (tls.insecure_skip_verify) {
        set(CURLOPT_SSL_VERIFYPEER, 0L);
        set(CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return rc;
}

} // namespace tandem::net::detail
