// The ExecCredential protocol (client.authentication.k8s.io v1beta1 and v1), as client-go's exec
// authenticator speaks it: the request goes in KUBERNETES_EXEC_INFO, the answer comes on stdout.

#include "backends/k8s/exec_credential.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/k8s/exec_credential_process.hpp"
#include "backends/k8s/kubeconfig_data.hpp"

extern char** environ;

namespace tandem::k8s {

namespace {

using nlohmann::json;

// RFC 3339 ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00.5+02:00") to Unix seconds.
std::optional<std::int64_t> parse_rfc3339(const std::string& text) {
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
        return std::nullopt;
    }
    std::size_t i = static_cast<std::size_t>(consumed);
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            ++i;
        }
    }
    long offset = 0;
    if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
        ++i;
    } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
        int oh = 0, om = 0, n = 0;
        if (std::sscanf(text.c_str() + i + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5) {
            return std::nullopt;
        }
        offset = (text[i] == '-' ? -1 : 1) * (oh * 3600L + om * 60L);
        i += 1 + static_cast<std::size_t>(n);
    } else {
        return std::nullopt;
    }
    if (i != text.size() || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) {
        return std::nullopt;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return static_cast<std::int64_t>(::timegm(&tm)) - offset;
}

// A string member of `obj`, or an error naming the field (never its value).
Result<std::string> string_member(const json& obj, const char* key, const std::string& who) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return std::string();
    }
    if (!it->is_string()) {
        return fail(ErrorKind::unauthorized,
                    fmt::format("{} returned an ExecCredential whose status.{} is not a string", who, key));
    }
    return it->get<std::string>();
}

json exec_info(const ExecPlugin& plugin, const KubeContext& context) {
    json spec = {{"interactive", false}};
    if (plugin.provide_cluster_info) {
        json cluster = {{"server", context.server}};
        std::string ca = context.tls.ca_pem;
        if (ca.empty() && !context.tls.ca_file.empty()) {
            std::string why;
            ca = detail::read_file(context.tls.ca_file, why).value_or("");
        }
        if (!ca.empty()) {
            cluster["certificate-authority-data"] = detail::base64_encode(ca);
        }
        if (context.tls.insecure_skip_verify) {
            cluster["insecure-skip-tls-verify"] = true;
        }
        spec["cluster"] = std::move(cluster);
    }
    return {{"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}};
}

std::vector<std::string> plugin_environment(const ExecPlugin& plugin, const KubeContext& context) {
    std::vector<std::pair<std::string, std::string>> vars;
    auto set = [&](const std::string& name, const std::string& value) {
        for (auto& v : vars) {
            if (v.first == name) {
                v.second = value;
                return;
            }
        }
        vars.emplace_back(name, value);
    };
    for (char** e = environ; e && *e; ++e) {
        std::string_view entry(*e);
        auto eq = entry.find('=');
        if (eq != std::string_view::npos) {
            vars.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
        }
    }
    for (const auto& [name, value] : plugin.env) {
        set(name, value);
    }
    set("KUBERNETES_EXEC_INFO", exec_info(plugin, context).dump());
    std::vector<std::string> out;
    out.reserve(vars.size());
    for (const auto& [name, value] : vars) {
        out.push_back(name + "=" + value);
    }
    return out;
}

} // namespace

Result<ExecResult> parse_exec_credential(const std::string& output, const std::string& api_version,
                                         const std::string& who) {
    const auto bad = [&](std::string what) {
        // One line, also when it quotes a value the plugin printed (apiVersion, expirationTimestamp).
        std::replace_if(
            what.begin(), what.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
        return fail(ErrorKind::unauthorized, fmt::format("{} {}", who, what),
                    "run the plugin by hand to see what it prints; it must print an ExecCredential");
    };
    json doc;
    try {
        doc = json::parse(output);
    } catch (const json::parse_error& e) {
        // e.what() quotes the text around the error, which may be the credential: only the position.
        return bad(output.empty()
                       ? "printed nothing on stdout"
                       : fmt::format("printed output that is not JSON (error at byte {})", e.byte));
    } catch (const json::exception&) { // out_of_range: a number too large for a double ("1e999")
        return bad("printed output that is not JSON (a number out of range)");
    }
    if (!doc.is_object()) {
        return bad("printed JSON that is not an ExecCredential object");
    }
    const auto version = doc.find("apiVersion");
    if (version == doc.end() || !version->is_string() || *version != api_version) {
        return bad(fmt::format(
            "returned apiVersion '{}', but the kubeconfig asked for '{}'",
            version != doc.end() && version->is_string() ? version->get<std::string>() : "", api_version));
    }
    if (const auto kind = doc.find("kind"); kind == doc.end() || *kind != "ExecCredential") {
        return bad("returned an object whose kind is not ExecCredential");
    }
    const auto status = doc.find("status");
    if (status == doc.end() || !status->is_object()) {
        return bad("returned an ExecCredential without a status");
    }
    ExecResult result;
    auto token = string_member(*status, "token", who);
    auto cert = string_member(*status, "clientCertificateData", who);
    auto key = string_member(*status, "clientKeyData", who);
    auto expiry = string_member(*status, "expirationTimestamp", who);
    for (auto* r : {&token, &cert, &key, &expiry}) {
        if (!*r) {
            return tl::unexpected(r->error());
        }
    }
    result.token = std::move(*token);
    result.client_cert_pem = std::move(*cert);
    result.client_key_pem = std::move(*key);
    if (result.client_cert_pem.empty() != result.client_key_pem.empty()) {
        return bad(result.client_cert_pem.empty()
                       ? "returned status.clientKeyData without status.clientCertificateData"
                       : "returned status.clientCertificateData without status.clientKeyData");
    }
    if (result.token.empty() && result.client_cert_pem.empty()) {
        return bad("returned neither status.token nor status.clientCertificateData and clientKeyData");
    }
    if (!expiry->empty()) {
        result.expires_at = parse_rfc3339(*expiry);
        if (!result.expires_at) {
            return bad(fmt::format("returned status.expirationTimestamp '{}', which is not an RFC 3339 time",
                                   *expiry));
        }
    }
    return result;
}

Result<ExecResult> run_exec_plugin(const ExecPlugin& plugin, const KubeContext& context,
                                   const ExecOptions& options) {
    const std::string who = fmt::format("k8s/{}: exec plugin '{}'", context.name, plugin.command);
    if (plugin.interactive_mode == "Always") {
        return fail(
            ErrorKind::config,
            fmt::format("{} needs a terminal (interactiveMode: Always), and tandem never prompts", who),
            "run the plugin once by hand (e.g. to log in), or set interactiveMode: IfAvailable");
    }
    std::string program = plugin.command;
    if (program.find('/') == std::string::npos) {
        const char* path = ::getenv("PATH");
        program = detail::find_on_path(program, path ? path : "/usr/local/bin:/usr/bin:/bin");
        if (program.empty()) {
            return fail(ErrorKind::config, fmt::format("{} was not found on PATH", who),
                        plugin.install_hint.empty()
                            ? "install it, or fix users[].user.exec.command in the kubeconfig"
                            : detail::trim(plugin.install_hint));
        }
    } else if (::access(program.c_str(), X_OK) != 0) {
        return fail(
            ErrorKind::config,
            fmt::format("{} cannot be run: {}", who, errno == ENOENT ? "no such file" : std::strerror(errno)),
            plugin.install_hint.empty() ? "fix users[].user.exec.command in the kubeconfig"
                                        : detail::trim(plugin.install_hint));
    }
    auto outcome = detail::run_process(program, plugin.args, plugin_environment(plugin, context),
                                       options.timeout, options.max_output);
    using End = detail::ProcessOutcome::End;
    switch (outcome.end) {
    case End::spawn_failed:
        return fail(ErrorKind::config,
                    fmt::format("{} could not be started: {}", who, std::strerror(outcome.code)));
    case End::timed_out:
        return fail(ErrorKind::timeout,
                    fmt::format("{} did not finish within {:g} s", who,
                                static_cast<double>(options.timeout.count()) / 1000.0),
                    "run the plugin by hand: it may be waiting for a login");
    case End::too_much_output:
        return fail(ErrorKind::unauthorized,
                    fmt::format("{} printed more than {} bytes; an ExecCredential is small", who,
                                options.max_output));
    case End::signalled:
        return fail(ErrorKind::unauthorized, fmt::format("{} was killed by signal {}", who, outcome.code));
    case End::exited:
        if (outcome.code != 0) {
            return fail(ErrorKind::unauthorized, fmt::format("{} exited with code {}", who, outcome.code),
                        "the plugin's own messages, if any, are above on stderr");
        }
        break;
    }
    return parse_exec_credential(outcome.stdout_text, plugin.api_version, who);
}

} // namespace tandem::k8s
