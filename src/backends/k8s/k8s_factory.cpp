#include "backends/k8s/k8s_factory.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "backends/k8s/in_cluster.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/k8s_settings.hpp"
#include "backends/k8s/kubeconfig.hpp"

namespace tandem::k8s {

namespace {

std::string where(const ClusterConfig& c) {
    return c.loc.line > 0 ? fmt::format("{}:{}:{}: ", c.loc.file, c.loc.line, c.loc.column) : std::string{};
}

Result<Kubeconfig> kubeconfig_for(const K8sSettings& settings, const GetEnv& getenv) {
    if (settings.kubeconfig.empty()) {
        return load_kubeconfig(getenv);
    }
    std::ifstream in(settings.kubeconfig, std::ios::binary);
    if (!in) {
        return fail(ErrorKind::config, fmt::format("cannot read kubeconfig {}", settings.kubeconfig));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_kubeconfigs({{settings.kubeconfig, text.str()}});
}

} // namespace

Result<std::unique_ptr<Backend>> make_k8s_backend(const ClusterConfig& c, const std::string& state_dir,
                                                  const GetEnv& getenv) {
    auto settings = parse_k8s_settings(c, getenv);
    if (!settings) {
        return tl::unexpected(settings.error());
    }
    KubeContext context;
    if (settings->context == k_in_cluster_context) {
        auto in_cluster = in_cluster_context(getenv);
        if (!in_cluster) {
            return tl::unexpected(in_cluster.error());
        }
        if (!*in_cluster) {
            return fail(ErrorKind::config,
                        fmt::format("{}cluster '{}': context in-cluster, but this is not a pod "
                                    "(KUBERNETES_SERVICE_HOST is not set)",
                                    where(c), c.name));
        }
        context = std::move(**in_cluster);
    } else {
        auto kubeconfig = kubeconfig_for(*settings, getenv);
        if (!kubeconfig) {
            return tl::unexpected(kubeconfig.error());
        }
        const std::string name = settings->context.empty() ? kubeconfig->current_context : settings->context;
        const KubeContext* found = name.empty() ? nullptr : kubeconfig->find(name);
        if (found == nullptr) {
            const std::string files = kubeconfig->files.empty()
                                          ? std::string("no kubeconfig file found")
                                          : fmt::format("{}", fmt::join(kubeconfig->files, ", "));
            return fail(ErrorKind::config,
                        name.empty()
                            ? fmt::format("{}cluster '{}': no context given and the kubeconfig has no "
                                          "current-context ({})",
                                          where(c), c.name, files)
                            : fmt::format("{}cluster '{}': kubeconfig context '{}' not found ({})", where(c),
                                          c.name, name, files),
                        "list the contexts with `kubectl config get-contexts`");
        }
        context = *found;
    }
    if (!context.error.empty()) {
        return fail(ErrorKind::config, fmt::format("{}cluster '{}': {}", where(c), c.name, context.error),
                    context.hint);
    }
    auto factory = [](const net::TlsSettings& tls) -> std::unique_ptr<net::HttpClient> {
        return std::make_unique<net::CurlHttpClient>(tls);
    };
    return std::make_unique<K8sBackend>(c.name, std::move(*settings), std::move(context), state_dir, factory);
}

std::vector<ClusterConfig> discover_k8s_clusters(const GetEnv& getenv) {
    std::vector<ClusterConfig> out;
    auto add = [&](const std::string& context) {
        ClusterConfig c;
        c.name = "k8s/" + context;
        c.kind = BackendKind::kubernetes;
        c.settings = {{"context", context}};
        c.found = true;
        out.push_back(std::move(c));
    };
    if (auto in_cluster = in_cluster_context(getenv); in_cluster && *in_cluster) {
        add(k_in_cluster_context);
    }
    auto kubeconfig = load_kubeconfig(getenv);
    if (kubeconfig) {
        for (const auto& ctx : kubeconfig->contexts) {
            add(ctx.name);
        }
    }
    return out;
}

} // namespace tandem::k8s
