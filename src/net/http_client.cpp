// CurlHttpClient: the retry loop and the pool of reusable easy handles. One attempt on one handle lives in
// curl_exchange.cpp; the decisions (classification, messages, backoff) in http_policy.cpp.

#include "net/http_client.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/redact.hpp"
#include "net/curl_exchange.hpp"
#include "net/http_policy.hpp"
#include "net/plain_http.hpp"

namespace tandem::net {

std::optional<std::string_view> HttpResponse::header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
        if (key.size() == name.size() &&
            std::equal(key.begin(), key.end(), name.begin(), [](char stored, char asked) {
                return stored == std::tolower(static_cast<unsigned char>(asked));
            })) {
            return std::string_view(value);
        }
    }
    return std::nullopt;
}

namespace {

// Loads libcurl and initialises it, once. On failure `load_error` says why (libcurl missing).
CURLcode global_init(std::string& load_error) {
    static std::once_flag once;
    static CURLcode result = CURLE_OK;
    static std::string error;
    std::call_once(once, [] {
        if (load_curl(&error) == nullptr) {
            result = CURLE_FAILED_INIT;
            return;
        }
        result = curl().global_init(CURL_GLOBAL_DEFAULT);
    });
    load_error = error;
    return result;
}

} // namespace

bool needs_libcurl(std::string_view url) {
    return !detail::plain_http_usable(url);
}

namespace {
std::atomic<bool> g_preload_started{false};
} // namespace

void start_libcurl_preload() {
    if (g_preload_started.exchange(true)) {
        return;
    }
    std::thread([] {
        std::string ignored;
        (void)global_init(ignored);
    }).detach();
}

namespace {

double unit_random() {
    thread_local std::mt19937 rng{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string describe_headers(const Headers& headers) {
    std::string out;
    for (const auto& [name, value] : headers) {
        out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", name,
                           is_credential_header(name) ? std::string(k_redacted) : value);
    }
    return out;
}

Error internal_error(const HttpRequest& request, std::string_view what) {
    const std::string message =
        fmt::format("{} {} failed: {}", request.method, parse_target(request.url).host_port, what);
    return Error{ErrorKind::internal, redact(message, credential_values(request.headers)), {}};
}

} // namespace

struct CurlHttpClient::Impl {
    TlsSettings tls;
    RetryPolicy retry;
    HttpTransport transport = HttpTransport::automatic;
    std::atomic<long> connections{0};
    std::function<void(std::string_view)> debug;
    std::mutex mutex;
    std::vector<CURL*> idle; // most recently used last: its connection is the warmest
    detail::PlainConnections plain;

    CURL* acquire() {
        {
            std::lock_guard lock(mutex);
            if (!idle.empty()) {
                CURL* h = idle.back();
                idle.pop_back();
                return h;
            }
        }
        return curl().easy_init();
    }
    void release(CURL* h) {
        std::lock_guard lock(mutex);
        idle.push_back(h);
    }

    bool plain_for(const HttpRequest& request) const {
        return transport == HttpTransport::automatic && detail::plain_http_usable(request.url);
    }

    void log(const HttpRequest& request, const AttemptResult& r, int attempt,
             const std::vector<std::string>& secrets) const {
        if (!debug) {
            return;
        }
        const UrlTarget t = parse_target(request.url);
        const char* connection = r.new_connections > 0 ? "new" : r.response.status != 0 ? "reused" : "no";
        const std::string outcome =
            r.failure ? fmt::format("{}: {}", to_string(r.failure->error.kind), r.failure->error.message)
                      : fmt::format("HTTP {}", r.response.status);
        debug(redact(fmt::format("http: {} {}{} [{}] attempt {} -> {} ({} ms, {} connection)", request.method,
                                 t.host_port, t.path, describe_headers(request.headers), attempt, outcome,
                                 r.elapsed.count(), connection),
                     secrets));
    }

    // Runs attempts until one succeeds or the policy gives up. Plain http:// goes through tandem's own
    // HTTP/1.1 exchange (no libcurl loaded for it), everything else through libcurl.
    Result<HttpResponse> run(const HttpRequest& request, const ChunkSink* on_chunk, HttpResponse* head) {
        const std::vector<std::string> secrets = credential_values(request.headers);
        const bool use_plain = plain_for(request);
        if (!use_plain) {
            std::string load_error;
            if (const CURLcode init = global_init(load_error); init != CURLE_OK) {
                return tl::unexpected(internal_error(
                    request, load_error.empty() ? std::string(curl().easy_strerror(init)) : load_error));
            }
        }
        // Attempts and the waits between them share one budget (next_attempt_timeout): a retry may get
        // less than the whole timeout, carried by a copy of the request.
        std::chrono::milliseconds spent{0};
        HttpRequest shortened;
        const HttpRequest* attempt = &request;
        for (int attempts = 1;; ++attempts) {
            AttemptResult r;
            const auto began = std::chrono::steady_clock::now();
            if (use_plain) {
                r = detail::perform_plain_attempt(this->plain, *attempt, on_chunk, head, secrets);
            } else {
                CURL* h = acquire();
                if (h == nullptr) {
                    return tl::unexpected(internal_error(request, "cannot create a libcurl handle"));
                }
                r = detail::perform_attempt(h, tls, *attempt, on_chunk, head, secrets);
                release(h);
            }
            spent += std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                           began);
            connections += r.new_connections;
            log(request, r, attempts, secrets);
            if (!r.failure) {
                return std::move(r.response);
            }
            const auto delay = retry_delay(retry, request, *r.failure, attempts, unit_random());
            const auto next = delay ? next_attempt_timeout(request.timeout, spent + *delay) : std::nullopt;
            if (!delay || !next) {
                Error e = final_error(retry, *r.failure, attempts, secrets);
                if (delay && r.failure->retry_after) { // a wait the budget has no room for
                    e.message += fmt::format(
                        " (server asks to retry after {} s)",
                        std::chrono::duration_cast<std::chrono::seconds>(*r.failure->retry_after).count());
                }
                return tl::unexpected(std::move(e));
            }
            if (retry.sleep) {
                retry.sleep(*delay);
            } else {
                std::this_thread::sleep_for(*delay);
            }
            spent += *delay;
            if (*next != attempt->timeout) {
                shortened = request;
                shortened.timeout = *next;
                attempt = &shortened;
            }
        }
    }
};

CurlHttpClient::CurlHttpClient(TlsSettings tls, RetryPolicy retry, HttpTransport transport)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->tls = std::move(tls);
    m_impl->retry = std::move(retry);
    m_impl->retry.max_attempts = std::max(1, m_impl->retry.max_attempts);
    m_impl->transport = transport;
}

CurlHttpClient::~CurlHttpClient() {
    for (CURL* h : m_impl->idle) {
        curl().easy_cleanup(h);
    }
}

long CurlHttpClient::connections_opened() const {
    return m_impl->connections.load();
}

void CurlHttpClient::set_debug_sink(std::function<void(std::string_view)> sink) {
    m_impl->debug = std::move(sink);
}

Result<HttpResponse> CurlHttpClient::request(const HttpRequest& request) {
    try {
        return m_impl->run(request, nullptr, nullptr);
    } catch (const std::exception& e) {
        return tl::unexpected(internal_error(request, e.what()));
    } catch (...) {
        return tl::unexpected(internal_error(request, "unknown exception"));
    }
}

Status CurlHttpClient::stream(const HttpRequest& request,
                              const std::function<bool(std::string_view)>& on_chunk, HttpResponse* head) {
    try {
        auto result = m_impl->run(request, &on_chunk, head);
        if (!result) {
            return tl::unexpected(std::move(result.error()));
        }
        return {};
    } catch (const std::exception& e) {
        return tl::unexpected(internal_error(request, e.what()));
    } catch (...) {
        return tl::unexpected(internal_error(request, "unknown exception"));
    }
}

} // namespace tandem::net

namespace tandem::net {

Result<std::unique_ptr<WebSocket>> CurlHttpClient::open_websocket(const HttpRequest& request,
                                                                  const std::vector<std::string>& protocols,
                                                                  HttpResponse* refused) {
    return detail::open_websocket(m_impl->tls, request, protocols, refused);
}

} // namespace tandem::net
