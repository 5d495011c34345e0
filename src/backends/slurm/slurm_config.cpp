#include "backends/slurm/slurm_config.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/quantity.hpp"

namespace tandem::slurm {

namespace {

std::string where(const ClusterConfig& c) {
    return c.loc.line > 0 ? fmt::format("{}:{}:{}: ", c.loc.file, c.loc.line, c.loc.column) : std::string{};
}

Error bad(const ClusterConfig& c, const std::string& field, const std::string& message) {
    return Error{
        ErrorKind::config, fmt::format("{}clusters.{}.{}: {}", where(c), c.name, field, message), {}};
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

} // namespace

Result<SlurmSettings> parse_slurm_settings(const ClusterConfig& c, const GetEnv& getenv) {
    static const std::set<std::string> known{"rest", "home", "timeout_seconds"};
    SlurmSettings settings;
    for (const auto& [key, value] : c.settings.items()) {
        if (known.count(key) == 0U) {
            return tl::unexpected(
                bad(c, key, "unknown setting for a slurm cluster (known: rest, home, timeout_seconds)"));
        }
    }
    if (auto it = c.settings.find("timeout_seconds"); it != c.settings.end()) {
        auto n = it->is_string() ? parse_positive_int(it->get<std::string>())
                                 : tl::unexpected(std::string("not a number"));
        if (!n) {
            return tl::unexpected(bad(c, "timeout_seconds", n.error()));
        }
        settings.timeout = std::chrono::seconds(*n);
    }
    auto rest_it = c.settings.find("rest");
    if (rest_it == c.settings.end() || !rest_it->is_object()) {
        return tl::unexpected(bad(c, "rest", "is required (url, user, and token, token_env or token_file)"));
    }
    const auto& rest = *rest_it;
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
    static const std::set<std::string> versions{"auto", "v0.0.38", "v0.0.40", "v0.0.41"};
    if (versions.count(r.api_version) == 0U) {
        return tl::unexpected(
            bad(c, "rest.api_version",
                fmt::format("'{}' is not one of auto, v0.0.38, v0.0.40, v0.0.41", r.api_version)));
    }
    r.ca_file = string_or_empty(rest, "ca_file");
    settings.home = string_or_empty(c.settings, "home");
    if (settings.home.empty()) {
        settings.home = "/home/" + r.user;
    }
    settings.rest = std::move(r);
    return settings;
}

} // namespace tandem::slurm
