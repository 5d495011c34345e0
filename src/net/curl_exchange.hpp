#pragma once
// One attempt of one HTTP exchange on one libcurl easy handle (internal to tandem_net). The handle is
// reset and configured afresh for every attempt; curl_easy_reset keeps the handle's live connections,
// DNS cache and TLS session cache, which is what makes reuse across requests work.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <curl/curl.h>

#include "net/curl_api.hpp"
#include "net/http_client.hpp"
#include "net/http_policy.hpp"

namespace tandem::net::detail {

// Streaming when on_chunk is given: 2xx (and pass_statuses) bodies go to it, `head` is filled first.
AttemptResult perform_attempt(CURL* handle, const TlsSettings& tls, const HttpRequest& request,
                              const ChunkSink* on_chunk, HttpResponse* head,
                              const std::vector<std::string>& secrets);

// The TLS options of `tls` on a handle (CA, client certificate and key, files or PEM blobs).
CURLcode configure_tls(CURL* h, const TlsSettings& tls);

// CurlHttpClient::open_websocket (curl_websocket.cpp).
Result<std::unique_ptr<WebSocket>> open_websocket(const TlsSettings& tls, const HttpRequest& request,
                                                  const std::vector<std::string>& protocols, HttpResponse* refused);

// Whether the URL's host is this machine (localhost, 127.0.0.0/8, [::1]): no compressed answer is asked
// for there.
bool loopback_url(std::string_view url);

} // namespace tandem::net::detail
