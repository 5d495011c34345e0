#include "core/value_checks.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <fmt/format.h>

namespace tandem {

namespace {

bool has_space_or_control(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; });
}

} // namespace

tl::expected<void, std::string> check_git_url(std::string_view url) {
    if (url.empty()) {
        return tl::unexpected(std::string("must not be empty"));
    }
    if (has_space_or_control(url) || url.front() == '-') {
        return tl::unexpected(
            std::string("is not a git URL (no spaces or control characters, no leading '-')"));
    }
    constexpr std::array<std::string_view, 5> schemes{"https://", "http://", "ssh://", "git://", "file://"};
    for (auto scheme : schemes) {
        if (url.starts_with(scheme)) {
            if (url.size() == scheme.size()) {
                break;
            }
            // user:password@ would put a credential in the job record, `plan` and the job's log.
            const auto authority = url.substr(scheme.size(), url.find('/', scheme.size()) - scheme.size());
            const auto at = authority.rfind('@');
            if (at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos) {
                return tl::unexpected(std::string(
                    "has a password or token in it; give the token in GIT_TOKEN (or a key in GIT_SSH_KEY_PATH) "
                    "when you launch, as SkyPilot does"));
            }
            return {};
        }
    }
    // scp-style: [user@]host:path, with no "://" and a host before the colon.
    const auto colon = url.find(':');
    if (url.find("://") == std::string_view::npos && colon != std::string_view::npos && colon > 0 &&
        colon + 1 < url.size() && url.substr(0, colon).find('/') == std::string_view::npos) {
        return {};
    }
    // The URL is not echoed: a malformed one may still hold a credential.
    return tl::unexpected(std::string("is not a git URL: use https://host/owner/repo, ssh://user@host/owner/repo, "
                                      "user@host:owner/repo, git:// or file://"));
}

bool is_cloud_name(std::string_view name) {
    // SkyPilot's ALL_CLOUDS without kubernetes and slurm.
    constexpr std::array<std::string_view, 24> clouds{
        "aws",    "azure",      "gcp",       "ibm",   "lambda",     "scp",      "oci",    "runpod",
        "vast",   "vsphere",    "cudo",      "fluidstack", "paperspace", "primeintellect", "do",
        "nebius", "ssh",        "hyperbolic", "seeweb", "shadeform", "yotta",   "mithril", "verda",
        "cloudflare"};
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::find(clouds.begin(), clouds.end(), lower) != clouds.end();
}

bool valid_git_ref(std::string_view ref) {
    if (ref.empty() || ref.size() > 255 || has_space_or_control(ref) || ref.front() == '-' ||
        ref.front() == '/' || ref.back() == '/' || ref.back() == '.' || ref.ends_with(".lock")) {
        return false;
    }
    if (ref.find("..") != std::string_view::npos || ref.find("@{") != std::string_view::npos ||
        ref.find("//") != std::string_view::npos) {
        return false;
    }
    return ref.find_first_of("~^:?*[\\") == std::string_view::npos;
}

tl::expected<SbatchOptionName, std::string> sbatch_option_name(std::string_view written) {
    std::string_view name = written;
    while (name.starts_with('-')) {
        name.remove_prefix(1);
    }
    const bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name.front())) &&
                    std::all_of(name.begin(), name.end(), [](unsigned char c) {
                        return std::isalnum(c) || c == '-' || c == '_';
                    });
    if (!ok) {
        return tl::unexpected(fmt::format("'{}' is not an sbatch option name", written));
    }
    // Short forms sbatch takes, for the options that matter here.
    constexpr std::array<std::pair<std::string_view, std::string_view>, 12> shorts{{
        {"p", "partition"}, {"A", "account"}, {"q", "qos"}, {"C", "constraint"}, {"t", "time"},
        {"J", "job-name"}, {"N", "nodes"}, {"o", "output"}, {"e", "error"}, {"D", "chdir"},
        {"c", "cpus-per-task"}, {"G", "gpus"},
    }};
    std::string longname(name);
    for (const auto& [s, l] : shorts) {
        if (name == s) {
            longname = l;
        }
    }
    std::replace(longname.begin(), longname.end(), '_', '-');
    constexpr std::array<std::pair<std::string_view, SbatchOption>, 5> folded{{
        {"partition", SbatchOption::partition},
        {"account", SbatchOption::account},
        {"qos", SbatchOption::qos},
        {"constraint", SbatchOption::constraint},
        {"time", SbatchOption::time},
    }};
    for (const auto& [l, kind] : folded) {
        if (longname == l) {
            return SbatchOptionName{longname, kind};
        }
    }
    // What tandem writes itself from the task; the task field says it instead.
    constexpr std::array<std::pair<std::string_view, std::string_view>, 16> own{{
        {"job-name", "name"},
        {"nodes", "num_nodes"},
        {"ntasks", "num_nodes (one task per node)"},
        {"ntasks-per-node", "num_nodes (one task per node)"},
        {"gres", "resources.accelerators"},
        {"gpus", "resources.accelerators"},
        {"gpus-per-node", "resources.accelerators"},
        {"cpus-per-task", "resources.cpus"},
        {"mem", "resources.memory"},
        {"output", "nothing: tandem writes the output where `logs` reads it"},
        {"error", "nothing: tandem writes the output where `logs` reads it"},
        {"chdir", "workdir"},
        {"comment", "nothing: tandem keeps its submit token there"},
        {"export", "envs"},
        {"wrap", "run"},
        {"parsable", "nothing: tandem reads the job id itself"},
    }};
    for (const auto& [l, instead] : own) {
        if (longname == l) {
            return tl::unexpected(
                fmt::format("--{} is set by tandem from the task; use {}", longname, instead));
        }
    }
    return SbatchOptionName{longname, SbatchOption::extra};
}

} // namespace tandem
