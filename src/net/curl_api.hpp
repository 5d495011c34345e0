#pragma once
// libcurl, loaded on first use. Linking it would make every tandem process load ~30 libraries (TLS,
// Kerberos, LDAP, RTMP...) at start, which costs milliseconds that `tandem --help`, local jobs and
// `status --no-refresh` never need. The HTTP client asks for these entry points when it is built.

#include <string>

#include <curl/curl.h>

namespace tandem::net {

struct CurlApi {
    CURLcode (*global_init)(long flags);
    CURL* (*easy_init)();
    void (*easy_cleanup)(CURL* handle);
    void (*easy_reset)(CURL* handle);
    CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL* handle);
    CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...);
    const char* (*easy_strerror)(CURLcode code);
    curl_slist* (*slist_append)(curl_slist* list, const char* line);
    void (*slist_free_all)(curl_slist* list);
    CURLcode (*easy_send)(CURL* handle, const void* buffer, size_t length, size_t* sent);
    CURLcode (*easy_recv)(CURL* handle, void* buffer, size_t length, size_t* received);
};

// Loads libcurl once; nullptr when it cannot be loaded, with the reason in `error`.
const CurlApi* load_curl(std::string* error = nullptr);
// The loaded API; only for code that runs after load_curl() succeeded.
const CurlApi& curl();

} // namespace tandem::net
