// Merging kubeconfig files and resolving contexts (see kubeconfig.hpp for the rules, which are kubectl's).

#include "backends/k8s/kubeconfig.hpp"

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include <fmt/format.h>
#include <sys/stat.h>

#include "backends/k8s/kubeconfig_data.hpp"
#include "backends/k8s/kubeconfig_entries.hpp"

namespace tandem::k8s {

namespace {

using detail::ClusterEntry;
using detail::ContextEntry;
using detail::UserEntry;

// Entries by name, the first file to define a name winning; `file` remembers which file that was.
template <typename Entry> struct Named {
    const Entry* entry = nullptr;
    std::string file;
};

KubeContext resolve_context(const ContextEntry& ctx, const std::string& source,
                            const std::map<std::string, Named<ClusterEntry>>& clusters,
                            const std::map<std::string, Named<UserEntry>>& users) {
    KubeContext out;
    out.name = ctx.name;
    out.cluster_name = ctx.cluster;
    out.user_name = ctx.user;
    out.source = source;
    out.namespace_name = ctx.namespace_name.empty() ? "default" : ctx.namespace_name;
    auto broken = [&](std::string error, std::string hint) {
        if (out.error.empty()) {
            // One line (kubeconfig.hpp), also when a name quoted in it holds a line break.
            std::replace_if(
                error.begin(), error.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
            out.error = std::move(error);
            out.hint = std::move(hint);
        }
    };
    if (ctx.problem) {
        broken(ctx.problem->error, ctx.problem->hint);
    }
    if (ctx.cluster.empty()) {
        broken(fmt::format("context '{}' in {} names no cluster", ctx.name, source),
               "add `cluster:` to the context");
    } else if (auto it = clusters.find(ctx.cluster); it == clusters.end()) {
        broken(fmt::format("context '{}' names cluster '{}', which no kubeconfig file defines", ctx.name,
                           ctx.cluster),
               "check the context's cluster name, or add the file that defines it to KUBECONFIG");
    } else {
        const ClusterEntry& c = *it->second.entry;
        if (c.problem) {
            broken(c.problem->error, c.problem->hint);
        } else if (c.server.empty()) {
            broken(fmt::format("cluster '{}' in {} has no server", c.name, it->second.file),
                   "add `server: https://HOST:PORT` to the cluster");
        }
        out.server = c.server;
        out.tls.ca_file = c.ca_file;
        out.tls.ca_pem = c.ca_pem;
        out.tls.insecure_skip_verify = c.insecure;
    }
    if (ctx.user.empty()) {
        return out; // anonymous, as kubectl allows
    }
    if (auto it = users.find(ctx.user); it == users.end()) {
        broken(
            fmt::format("context '{}' names user '{}', which no kubeconfig file defines", ctx.name, ctx.user),
            "check the context's user name, or add the file that defines it to KUBECONFIG");
    } else {
        const UserEntry& u = *it->second.entry;
        if (u.problem) {
            broken(u.problem->error, u.problem->hint);
        }
        out.tls.client_cert_file = u.client_cert_file;
        out.tls.client_key_file = u.client_key_file;
        out.tls.client_cert_pem = u.client_cert_pem;
        out.tls.client_key_pem = u.client_key_pem;
        out.token = u.token;
        out.token_file = u.token_file;
        out.exec = u.exec;
    }
    return out;
}

} // namespace

const KubeContext* Kubeconfig::find(const std::string& name) const {
    auto it =
        std::find_if(contexts.begin(), contexts.end(), [&](const KubeContext& c) { return c.name == name; });
    return it == contexts.end() ? nullptr : &*it;
}

Result<Kubeconfig> parse_kubeconfigs(const std::vector<std::pair<std::string, std::string>>& files) {
    std::vector<detail::FileEntries> parsed;
    parsed.reserve(files.size());
    Kubeconfig config;
    for (const auto& [path, text] : files) {
        auto entries = detail::parse_kubeconfig_file(path, text);
        if (!entries) {
            return tl::unexpected(entries.error());
        }
        parsed.push_back(std::move(*entries));
        config.files.push_back(path);
    }
    std::map<std::string, Named<ClusterEntry>> clusters;
    std::map<std::string, Named<UserEntry>> users;
    std::vector<std::pair<const ContextEntry*, std::string>> contexts;
    std::set<std::string> context_names;
    for (std::size_t i = 0; i < parsed.size(); ++i) {
        const auto& file = files[i].first;
        for (const auto& c : parsed[i].clusters) {
            clusters.try_emplace(c.name, Named<ClusterEntry>{&c, file});
        }
        for (const auto& u : parsed[i].users) {
            users.try_emplace(u.name, Named<UserEntry>{&u, file});
        }
        for (const auto& c : parsed[i].contexts) {
            if (context_names.insert(c.name).second) {
                contexts.emplace_back(&c, file);
            }
        }
        if (config.current_context.empty()) {
            config.current_context = parsed[i].current_context;
        }
    }
    for (const auto& [ctx, file] : contexts) {
        config.contexts.push_back(resolve_context(*ctx, file, clusters, users));
    }
    return config;
}

Result<Kubeconfig> load_kubeconfig(const GetEnv& getenv) {
    std::vector<std::string> paths;
    if (auto list = getenv("KUBECONFIG"); list && !list->empty()) {
        std::size_t start = 0;
        while (start <= list->size()) {
            auto end = list->find(':', start);
            if (end == std::string::npos) {
                end = list->size();
            }
            std::string entry = list->substr(start, end - start);
            if (!entry.empty() && std::find(paths.begin(), paths.end(), entry) == paths.end()) {
                paths.push_back(std::move(entry));
            }
            start = end + 1;
        }
    } else if (auto home = getenv("HOME"); home && !home->empty()) {
        paths.push_back(*home + "/.kube/config");
    }
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
            continue; // kubectl skips missing files in KUBECONFIG
        }
        std::string why;
        auto text = detail::read_file(path, why);
        if (!text) {
            return fail(ErrorKind::config, fmt::format("cannot read kubeconfig {}: {}", path, why),
                        "fix the file's permissions, or remove it from KUBECONFIG");
        }
        files.emplace_back(path, std::move(*text));
    }
    return parse_kubeconfigs(files);
}

} // namespace tandem::k8s
