#include "backends/k8s/in_cluster.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <fmt/format.h>

#include "backends/k8s/kubeconfig_data.hpp"

namespace tandem::k8s {

Result<std::optional<KubeContext>> in_cluster_context(const GetEnv& getenv, const std::string& root) {
    const auto host = getenv("KUBERNETES_SERVICE_HOST");
    const auto port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || host->empty() || !port || port->empty()) {
        return std::optional<KubeContext>{};
    }
    KubeContext ctx;
    ctx.name = k_in_cluster_context;
    ctx.source = root;
    // An IPv6 address goes in brackets, as Go's net.JoinHostPort writes it.
    ctx.server = host->find(':') != std::string::npos ? fmt::format("https://[{}]:{}", *host, *port)
                                                      : fmt::format("https://{}:{}", *host, *port);
    const std::string hint = "the pod's service account token is not mounted; set "
                             "automountServiceAccountToken: true, or use a kubeconfig";
    std::string why;
    ctx.token_file = root + "/token";
    auto token = detail::read_file(ctx.token_file, why);
    if (!token) {
        return fail(ErrorKind::config,
                    fmt::format("in-cluster config: cannot read {}: {}", ctx.token_file, why), hint);
    }
    ctx.token = detail::trim(*token);
    if (ctx.token.empty()) {
        return fail(ErrorKind::config, fmt::format("in-cluster config: {} is empty", ctx.token_file), hint);
    }
    const std::string ca = root + "/ca.crt";
    if (::access(ca.c_str(), R_OK) != 0) {
        return fail(ErrorKind::config,
                    fmt::format("in-cluster config: cannot read {}: {}", ca, std::strerror(errno)), hint);
    }
    ctx.tls.ca_file = ca;
    auto ns = detail::read_file(root + "/namespace", why);
    ctx.namespace_name = ns ? detail::trim(*ns) : "";
    if (ctx.namespace_name.empty()) {
        ctx.namespace_name = "default";
    }
    return std::optional<KubeContext>(std::move(ctx));
}

} // namespace tandem::k8s
