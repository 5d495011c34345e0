#include "net/ssh_api.hpp"

#include <mutex>

#include "net/dl_library.hpp"

namespace tandem::net {

namespace {

struct Loaded {
    Libssh2Api api{};
    bool ok = false;
    std::string error;
};

const Loaded& loaded() {
    static Loaded state;
    static std::once_flag once;
    std::call_once(once, [] {
        void* lib = open_library("libssh2.so.1", "libssh2-1", state.error);
        if (lib == nullptr) {
            return;
        }
        auto& a = state.api;
        std::string& e = state.error;
        bool ok = true;
#define TANDEM_LIBSSH2_BIND(name)                                                                            \
    ok = ok && bind_symbol(lib, "libssh2.so.1", "libssh2_" #name, a.name, e,                                 \
                           " (install libssh2-1 1.10 or later)");
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
