#include "net/ssh_api.hpp"

#include <dlfcn.h>
#include <mutex>

namespace tandem::net {

namespace {

struct Loaded {
    Libssh2Api api{};
    bool ok = false;
    std::string error;
};

template <typename F> bool bind(void* lib, const char* name, F& out, std::string& error) {
    void* symbol = dlsym(lib, name);
    if (symbol == nullptr) {
        error = std::string("libssh2.so.1 has no ") + name + " (install libssh2-1 1.10 or later)";
        return false;
    }
    out = reinterpret_cast<F>(symbol);
    return true;
}

const Loaded& loaded() {
    static Loaded state;
    static std::once_flag once;
    std::call_once(once, [] {
        void* lib = dlopen("libssh2.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* why = dlerror();
            state.error =
                std::string("cannot load libssh2.so.1 (install libssh2-1): ") + (why ? why : "unknown");
            return;
        }
        auto& a = state.api;
        std::string& e = state.error;
        bool ok = true;
#define TANDEM_LIBSSH2_BIND(name) ok = ok && bind(lib, "libssh2_" #name, a.name, e);
        TANDEM_LIBSSH2_FUNCTIONS(TANDEM_LIBSSH2_BIND)
#undef TANDEM_LIBSSH2_BIND
        if (ok && a.init(0) != 0) {
            e = "libssh2_init failed (its crypto backend could not start)";
            ok = false;
        }
        state.ok = ok;
        // The library stays loaded for the life of the process: sessions may outlive any one host.
    });
    return state;
}

} // namespace

const Libssh2Api* load_libssh2(std::string* error) {
    const Loaded& l = loaded();
    if (!l.ok && error != nullptr) {
        *error = l.error;
    }
    return l.ok ? &l.api : nullptr;
}

const Libssh2Api& libssh2() {
    return loaded().api;
}

} // namespace tandem::net
