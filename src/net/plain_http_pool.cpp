// Whether tandem's own HTTP/1.1 exchange may serve a URL (plain http://, no proxy to honour), and the idle
// connections it keeps for reuse within one command.

#include <cstdlib>
#include <iterator>
#include <mutex>
#include <unistd.h>

#include "net/plain_http.hpp"
#include "net/plain_http_request.hpp"

namespace tandem::net::detail {

namespace {

bool env_set(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0';
}

} // namespace

bool plain_http_usable(std::string_view url) {
    if (!split_url(url)) {
        return false;
    }
    if (!env_set("http_proxy") && !env_set("all_proxy") && !env_set("ALL_PROXY")) {
        return true;
    }
    const char* no_proxy = env_set("no_proxy") ? std::getenv("no_proxy") : std::getenv("NO_PROXY");
    return no_proxy != nullptr && std::string_view(no_proxy) == "*";
}

PlainConnections::~PlainConnections() {
    for (const auto& [key, fd] : m_idle) {
        ::close(fd);
    }
}

int PlainConnections::take(const std::string& host_port) {
    std::lock_guard lock(m_mutex);
    for (auto it = m_idle.rbegin(); it != m_idle.rend(); ++it) {
        if (it->first == host_port) {
            const int fd = it->second;
            m_idle.erase(std::next(it).base());
            return fd;
        }
    }
    return -1;
}

void PlainConnections::give(std::string host_port, int fd) {
    std::lock_guard lock(m_mutex);
    m_idle.emplace_back(std::move(host_port), fd);
}

} // namespace tandem::net::detail
