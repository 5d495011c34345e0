// An OpenSSH client config through lookup_ssh_config (net/ssh_config.hpp) for two host names, then what
// ssh_route does with the result: parse_proxy_jump and expand_ssh_path. The input is ~/.ssh/config and also
// every file an Include names (so Include recursion is exercised); reads are capped per lookup, since a
// file that includes itself N times per level costs N^16 reads in OpenSSH as here. Invariant: errors are
// one line.

#include <fnmatch.h>
#include <string>

#include "fuzz_common.hpp"
#include "net/ssh_config.hpp"

namespace {

constexpr int k_max_reads = 64;

void check_host(const std::string& text, const std::string& host) {
    using namespace tandem;
    int reads = 0;
    net::SshConfigSource source;
    source.read = [&](const std::string& path) -> Result<std::optional<std::string>> {
        if (!path.starts_with("/h/.ssh/") || ++reads > k_max_reads) {
            return std::optional<std::string>();
        }
        return std::optional<std::string>(text);
    };
    source.glob = [](const std::string& pattern) {
        std::vector<std::string> out;
        for (const char* path : {"/h/.ssh/config.d/a", "/h/.ssh/config.d/b", "/h/.ssh/extra"}) {
            if (::fnmatch(pattern.c_str(), path, FNM_PATHNAME) == 0) {
                out.emplace_back(path);
            }
        }
        return out;
    };
    const auto config = net::lookup_ssh_config("/h/.ssh/config", host, "/h/.ssh", source);
    fuzz::check_error_one_line(config, "lookup_ssh_config: error is one line");
    if (!config) {
        return;
    }
    if (config->proxy_jump) {
        fuzz::check_error_one_line(net::parse_proxy_jump(*config->proxy_jump, "ProxyJump"),
                                   "parse_proxy_jump: error is one line");
    }
    const net::SshTokens tokens{config->hostname.value_or(host), "me", config->user.value_or("me"),
                                config->port.value_or(22), "/h"};
    for (const auto* list : {&config->identity_files, &config->known_hosts_files}) {
        for (const auto& path : *list) {
            fuzz::check_error_one_line(net::expand_ssh_path(path, tokens, "IdentityFile"),
                                       "expand_ssh_path: error is one line");
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(fuzz::text(data, size));
    check_host(text, "login.example.org");
    check_host(text, "gpu1");
    return 0;
}
