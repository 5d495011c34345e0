#include "net/ssh_route.hpp"

#include <algorithm>

namespace tandem::net {

namespace {

void add_unique(std::vector<std::string>& list, const std::string& value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) {
        list.push_back(value);
    }
}

// One hop: the name as written, explicit values (empty/0 when not given) over the config's.
Result<SshEndpoint> resolve_endpoint(const std::string& name, const std::string& user, int port,
                                     const SshTarget& explicit_target, const std::string& config_path,
                                     const SshLocal& local, const SshConfigSource& source,
                                     SshHostConfig* config_out) {
    const std::string ssh_dir = local.home + "/.ssh";
    auto config = lookup_ssh_config(config_path, name, ssh_dir, source);
    if (!config) {
        return tl::unexpected(config.error());
    }
    SshEndpoint out;
    SshTokens tokens;
    tokens.host = name;
    tokens.local_user = local.local_user;
    tokens.home = local.home;
    if (config->hostname) {
        auto host = expand_ssh_path(*config->hostname, tokens, config_path + ": HostName of " + name);
        if (!host) {
            return tl::unexpected(host.error());
        }
        out.host = *host;
    } else {
        out.host = name;
    }
    out.user = !user.empty() ? user : config->user ? *config->user : local.local_user;
    out.port = port != 0 ? port : config->port.value_or(22);
    tokens.host = out.host;
    tokens.remote_user = out.user;
    tokens.port = out.port;

    if (!explicit_target.identity_file.empty()) {
        auto path = expand_ssh_path(explicit_target.identity_file, tokens, "ssh.identity_file");
        if (!path) {
            return tl::unexpected(path.error());
        }
        add_unique(out.identity_files, *path);
    }
    for (const auto& file : config->identity_files) {
        auto path = expand_ssh_path(file, tokens, config_path + ": IdentityFile of " + name);
        if (!path) {
            return tl::unexpected(path.error());
        }
        add_unique(out.identity_files, *path);
    }

    if (!explicit_target.known_hosts.empty()) {
        auto path = expand_ssh_path(explicit_target.known_hosts, tokens, "ssh.known_hosts");
        if (!path) {
            return tl::unexpected(path.error());
        }
        out.known_hosts.push_back(*path);
    } else {
        std::vector<std::string> files = config->known_hosts_files;
        if (files.empty()) {
            files = {"~/.ssh/known_hosts", "~/.ssh/known_hosts2"};
        }
        for (const auto& file : files) {
            if (file == "none") {
                continue;
            }
            auto path = expand_ssh_path(file, tokens, config_path + ": UserKnownHostsFile of " + name);
            if (!path) {
                return tl::unexpected(path.error());
            }
            add_unique(out.known_hosts, *path);
        }
        add_unique(out.known_hosts, "/etc/ssh/ssh_known_hosts");
        add_unique(out.known_hosts, "/etc/ssh/ssh_known_hosts2");
    }
    out.strict_host_key_checking = config->strict_host_key_checking.value_or("");
    if (config_out) {
        *config_out = std::move(*config);
    }
    return out;
}

} // namespace

std::string SshEndpoint::describe() const {
    return user + "@" + host + ":" + std::to_string(port);
}

std::string SshRoute::describe() const {
    std::string out = target.describe();
    for (std::size_t i = 0; i < jumps.size(); ++i) {
        out += (i == 0 ? " via " : ", ") + jumps[i].describe();
    }
    return out;
}

Result<SshRoute> resolve_ssh_route(const SshTarget& target, const std::string& config_path,
                                   const SshLocal& local, const SshConfigSource& source) {
    if (target.host.empty()) {
        return fail(ErrorKind::config, "ssh.host is empty");
    }
    if (target.port < 0 || target.port > 65535) {
        return fail(ErrorKind::config,
                    "ssh.port " + std::to_string(target.port) + " is not a port (1-65535)");
    }
    SshRoute route;
    SshHostConfig config;
    auto endpoint =
        resolve_endpoint(target.host, target.user, target.port, target, config_path, local, source, &config);
    if (!endpoint) {
        return tl::unexpected(endpoint.error());
    }
    route.target = std::move(*endpoint);

    std::string jump_text = target.proxy_jump;
    std::string what = "ssh.proxy_jump";
    if (jump_text.empty() && config.proxy_jump) {
        jump_text = *config.proxy_jump;
        what = config_path + ": ProxyJump of " + target.host;
    }
    if (!jump_text.empty()) {
        auto jumps = parse_proxy_jump(jump_text, what);
        if (!jumps) {
            return tl::unexpected(jumps.error());
        }
        // A jump host takes HostName, User, Port, IdentityFile from the config; its own ProxyJump is not
        // followed (the list is the whole chain). The cluster's identity file and known_hosts apply too.
        for (const auto& jump : *jumps) {
            auto hop = resolve_endpoint(jump.host, jump.user, jump.port, target, config_path, local, source,
                                        nullptr);
            if (!hop) {
                return tl::unexpected(hop.error());
            }
            route.jumps.push_back(std::move(*hop));
        }
    }
    for (const char* name : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
        route.default_identities.push_back(local.home + "/.ssh/" + name);
    }
    return route;
}

} // namespace tandem::net
