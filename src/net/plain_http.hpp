#pragma once
// tandem's own HTTP/1.1 exchange for plain http:// URLs (internal to tandem_net). slurmrestd is usually
// reached this way (on a login node, or through tandem's SSH tunnel), and there libcurl only costs: loading
// it and its ~30 libraries takes ~7 ms of a ~20 ms `tandem launch`. https, proxies and URLs with user info
// still go through libcurl (plain_http_usable says which).
//
// What it does, as libcurl does for these requests: keep-alive connections reused by later idempotent
// requests (a stale one is replaced once, before any answer byte, for those only), a fresh connection for
// every request that must not be repeated, Content-Length, chunked and read-to-close bodies, 1xx answers
// skipped, TCP_NODELAY, connect and whole-exchange deadlines. Failures are classified with the same
// messages as the libcurl path (see curl_exchange.cpp).

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/http_policy.hpp"

namespace tandem::net::detail {

// Whether `url` can take the plain exchange: http:// with a host, no user info, and no proxy from the
// environment (http_proxy, all_proxy or ALL_PROXY set sends it to libcurl, which knows no_proxy's rules;
// a no_proxy of "*" turns proxies off). Reads the environment at each call.
bool plain_http_usable(std::string_view url);

// Idle keep-alive connections by host:port, most recently used last. Thread-safe.
class PlainConnections {
public:
    PlainConnections() = default;
    ~PlainConnections();
    PlainConnections(const PlainConnections&) = delete;
    PlainConnections& operator=(const PlainConnections&) = delete;

    int take(const std::string& host_port); // -1 when none is idle
    void give(std::string host_port, int fd);

private:
    std::mutex m_mutex;
    std::vector<std::pair<std::string, int>> m_idle;
};

// One attempt. Streaming when on_chunk is given: 2xx (and pass_statuses) bodies go to it piece by piece
// as they arrive, `head` is filled first.
AttemptResult perform_plain_attempt(PlainConnections& connections, const HttpRequest& request,
                                    const ChunkSink* on_chunk, HttpResponse* head,
                                    const std::vector<std::string>& secrets);

} // namespace tandem::net::detail
