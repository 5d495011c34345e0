#pragma once
// A shared library loaded on first use (libcurl, libssh2): tandem links neither, so a command that reaches
// no cluster over HTTP or SSH loads neither. The library stays loaded for the life of the process.

#include <dlfcn.h>
#include <string>

namespace tandem::net {

// dlopen(soname), or nullptr with "cannot load SONAME (install PACKAGE): why" in `error`.
inline void* open_library(const char* soname, const char* package, std::string& error) {
    void* lib = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* why = dlerror();
        error =
            std::string("cannot load ") + soname + " (install " + package + "): " + (why ? why : "unknown");
    }
    return lib;
}

// Points `out` at `name` in `lib`; false with "SONAME has no NAME" (plus `advice`) in `error`.
template <typename F>
bool bind_symbol(void* lib, const char* soname, const char* name, F& out, std::string& error,
                 const char* advice = "") {
    void* symbol = dlsym(lib, name);
    if (symbol == nullptr) {
        error = std::string(soname) + " has no " + name + advice;
        return false;
    }
    out = reinterpret_cast<F>(symbol);
    return true;
}

} // namespace tandem::net
