#include "net/curl_api.hpp"

#include <mutex>

#include "net/dl_library.hpp"

namespace tandem::net {

namespace {

struct Loaded {
    CurlApi api{};
    bool ok = false;
    std::string error;
};

template <typename F> bool bind(void* lib, const char* name, F& out, std::string& error) {
    return bind_symbol(lib, "libcurl.so.4", name, out, error);
}

const Loaded& loaded() {
    static Loaded state;
    static std::once_flag once;
    std::call_once(once, [] {
        void* lib = open_library("libcurl.so.4", "libcurl4", state.error);
        if (lib == nullptr) {
            return;
        }
        auto& a = state.api;
        std::string& e = state.error;
        state.ok = bind(lib, "curl_global_init", a.global_init, e) &&
                   bind(lib, "curl_easy_init", a.easy_init, e) &&
                   bind(lib, "curl_easy_cleanup", a.easy_cleanup, e) &&
                   bind(lib, "curl_easy_reset", a.easy_reset, e) &&
                   bind(lib, "curl_easy_setopt", a.easy_setopt, e) &&
                   bind(lib, "curl_easy_perform", a.easy_perform, e) &&
                   bind(lib, "curl_easy_getinfo", a.easy_getinfo, e) &&
                   bind(lib, "curl_easy_strerror", a.easy_strerror, e) &&
                   bind(lib, "curl_slist_append", a.slist_append, e) &&
                   bind(lib, "curl_slist_free_all", a.slist_free_all, e) &&
                   bind(lib, "curl_easy_send", a.easy_send, e) && bind(lib, "curl_easy_recv", a.easy_recv, e);
        // The library stays loaded for the life of the process: handles may outlive any one client.
    });
    return state;
}

} // namespace

const CurlApi* load_curl(std::string* error) {
    const Loaded& l = loaded();
    if (!l.ok && error != nullptr) {
        *error = l.error;
    }
    return l.ok ? &l.api : nullptr;
}

const CurlApi& curl() {
    return loaded().api;
}

} // namespace tandem::net
