#include "backends/slurm/slurm_config.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "backends/config_errors.hpp"
#include "backends/slurm/api_version.hpp"
#include "core/quantity.hpp"

namespace tandem::slurm {

namespace {

Error bad(const ClusterConfig& c, const std::string& field, const std::string& message) {
    return backends::config_error(c, field, message);
}

std::string string_or_empty(const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<std::string> read_token(const ClusterConfig& c, const nlohmann::json& rest, const GetEnv& getenv) {
    const std::string inline_token = string_or_empty(rest, "token");
    const std::string env_name = string_or_empty(rest, "token_env");
    const std::string file = string_or_empty(rest, "token_file");
    const int given = !inline_token.empty() + !env_name.empty() + !file.empty();
    if (given != 1) {
        return tl::unexpected(bad(c, "rest", "give exactly one of token, token_env, token_file"));
    }
    if (!inline_token.empty()) {
        return inline_token;
    }
    if (!env_name.empty()) {
        auto value = getenv(env_name);
        if (!value || value->empty()) {
            return tl::unexpected(bad(c, "rest.token_env", fmt::format("${} is not set", env_name)));
        }
        return *value;
    }
    std::ifstream in(file);
    if (!in) {
        return tl::unexpected(bad(c, "rest.token_file", fmt::format("cannot read {}", file)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string token = text.str();
    // `scontrol token` prints SLURM_JWT=...; accept that file as it is.
    if (token.rfind("SLURM_JWT=", 0) == 0) {
        token.erase(0, 10);
    }
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
        token.pop_back();
    }
    if (token.empty()) {
        return tl::unexpected(bad(c, "rest.token_file", fmt::format("{} is empty", file)));
    }
    return token;
}

Result<RestSettings> parse_rest(const ClusterConfig& c, const nlohmann::json& rest, const GetEnv& getenv) {
    static const std::set<std::string> rest_keys{"url",        "user",        "token",  "token_env",
                                                 "token_file", "api_version", "ca_file"};
    for (const auto& [key, value] : rest.items()) {
        if (rest_keys.count(key) == 0U) {
            return tl::unexpected(bad(c, "rest." + key,
                                      "unknown setting (known: url, user, token, token_env, "
                                      "token_file, api_version, ca_file)"));
        }
    }
    RestSettings r;
    r.url = string_or_empty(rest, "url");
    while (!r.url.empty() && r.url.back() == '/') {
        r.url.pop_back();
    }
    if (r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0) {
        return tl::unexpected(bad(c, "rest.url", "must be http://HOST:PORT or https://HOST:PORT"));
    }
    r.user = string_or_empty(rest, "user");
    if (r.user.empty()) {
        return tl::unexpected(bad(c, "rest.user", "is required (the Slurm user the token belongs to)"));
    }
    auto token = read_token(c, rest, getenv);
    if (!token) {
        return tl::unexpected(token.error());
    }
    r.token = std::move(*token);
    r.api_version = string_or_empty(rest, "api_version");
    if (r.api_version.empty()) {
        r.api_version = "auto";
    }
    if (r.api_version != "auto" && !is_supported_api_version(r.api_version)) {
        return tl::unexpected(
            bad(c, "rest.api_version",
                fmt::format("'{}' is not one of auto, {}", r.api_version, supported_api_versions())));
    }
    r.ca_file = string_or_empty(rest, "ca_file");
    return r;
}

Result<SshSettings> parse_ssh(const ClusterConfig& c, const nlohmann::json& ssh) {
    static const std::set<std::string> ssh_keys{"host",          "port",        "user",
                                                "identity_file", "known_hosts", "proxy_jump"};
    for (const auto& [key, value] : ssh.items()) {
        if (ssh_keys.count(key) == 0U) {
            return tl::unexpected(bad(c, "ssh." + key,
                                      "unknown setting (known: host, port, user, identity_file, "
                                      "known_hosts, proxy_jump)"));
        }
        if (!value.is_string()) {
            return tl::unexpected(bad(c, "ssh." + key, "must be a single value"));
        }
    }
    SshSettings s;
    s.host = string_or_empty(ssh, "host");
    if (s.host.empty()) {
        return tl::unexpected(
            bad(c, "ssh.host", "is required (a host name, an address, or a Host alias of ~/.ssh/config)"));
    }
    if (s.host.find_first_of(" \t\n\r'\"") != std::string::npos || s.host.front() == '-') {
        return tl::unexpected(bad(c, "ssh.host", fmt::format("'{}' is not a host name", s.host)));
    }
    if (auto port = string_or_empty(ssh, "port"); !port.empty()) {
        auto n = parse_positive_int(port);
        if (!n || *n > 65535) {
            return tl::unexpected(bad(c, "ssh.port", fmt::format("'{}' is not a port (1-65535)", port)));
        }
        s.port = *n;
    }
    s.user = string_or_empty(ssh, "user");
    s.identity_file = string_or_empty(ssh, "identity_file");
    s.known_hosts = string_or_empty(ssh, "known_hosts");
    s.proxy_jump = string_or_empty(ssh, "proxy_jump");
    return s;
}

} // namespace

Result<SlurmSettings> parse_slurm_settings(const ClusterConfig& c, const GetEnv& getenv) {
    static const std::set<std::string> known{
        "rest", "ssh", "home", "timeout_seconds", "workdir_limit_mb", "default_partition"};
    SlurmSettings settings;
    for (const auto& [key, value] : c.settings.items()) {
        if (known.count(key) == 0U) {
            return tl::unexpected(bad(c, key,
                                      "unknown setting for a slurm cluster (known: rest, ssh, home, "
                                      "timeout_seconds, workdir_limit_mb, default_partition)"));
        }
    }
    auto positive = [&](const char* key) -> Result<std::optional<int>> {
        auto it = c.settings.find(key);
        if (it == c.settings.end()) {
            return std::optional<int>{};
        }
        auto n = it->is_string() ? parse_positive_int(it->get<std::string>())
                                 : tl::unexpected(std::string("not a number"));
        if (!n) {
            return tl::unexpected(bad(c, key, n.error()));
        }
        return std::optional<int>{*n};
    };
    auto timeout = positive("timeout_seconds");
    if (!timeout) {
        return tl::unexpected(timeout.error());
    }
    if (*timeout) {
        settings.timeout = std::chrono::seconds(**timeout);
    }
    auto limit = positive("workdir_limit_mb");
    if (!limit) {
        return tl::unexpected(limit.error());
    }
    if (*limit) {
        settings.workdir_limit_bytes = static_cast<std::uint64_t>(**limit) * 1024 * 1024;
    }
    auto rest_it = c.settings.find("rest");
    auto ssh_it = c.settings.find("ssh");
    if (rest_it == c.settings.end() && ssh_it == c.settings.end()) {
        return tl::unexpected(
            bad(c, "rest", "a slurm cluster needs rest: (slurmrestd), ssh: (a login node), or both"));
    }
    if (rest_it != c.settings.end()) {
        if (!rest_it->is_object()) {
            return tl::unexpected(
                bad(c, "rest", "must be a mapping (url, user, and token, token_env or token_file)"));
        }
        auto rest = parse_rest(c, *rest_it, getenv);
        if (!rest) {
            return tl::unexpected(rest.error());
        }
        settings.rest = std::move(*rest);
    }
    if (ssh_it != c.settings.end()) {
        if (!ssh_it->is_object()) {
            return tl::unexpected(bad(c, "ssh", "must be a mapping (host, port, user, identity_file, ...)"));
        }
        auto ssh = parse_ssh(c, *ssh_it);
        if (!ssh) {
            return tl::unexpected(ssh.error());
        }
        settings.ssh = std::move(*ssh);
    }
    settings.default_partition = string_or_empty(c.settings, "default_partition");
    if (settings.default_partition.find_first_of(" \t\r\n,") != std::string::npos) {
        return tl::unexpected(bad(c, "default_partition", "must be one partition name"));
    }
    settings.home = string_or_empty(c.settings, "home");
    while (settings.home.size() > 1 && settings.home.back() == '/') {
        settings.home.pop_back();
    }
    if (settings.home.empty()) {
        // The REST user, else the SSH user; with neither (a ~/.ssh/config alias), the SSH backend asks
        // the login node for $HOME.
        const std::string user = settings.rest ? settings.rest->user : settings.ssh->user;
        settings.home = user.empty() ? std::string() : "/home/" + user;
    } else if (settings.home.front() != '/') {
        return tl::unexpected(bad(c, "home", "must be an absolute path on the cluster"));
    }
    return settings;
}

} // namespace tandem::slurm
