#include "backends/registry.hpp"

#include <fmt/format.h>

#include "backends/local/local_backend.hpp"
#include "backends/slurm/slurm_config.hpp"
#include "backends/slurm/slurm_rest_backend.hpp"
#include "core/quantity.hpp"
#include "net/http_client.hpp"

namespace tandem::backends {

namespace {

std::string config_where(const ClusterConfig& c) {
    return c.loc.line > 0 ? fmt::format("{}:{}:{}: ", c.loc.file, c.loc.line, c.loc.column) : std::string{};
}

Result<std::unique_ptr<Backend>> make_local(const ClusterConfig& c, const BackendContext& context) {
    local::LocalSettings settings;
    for (const auto& [key, value] : c.settings.items()) {
        if (key == "accelerators" && value.is_string()) {
            auto acc = parse_accelerator(value.get<std::string>());
            if (!acc || acc->fractional()) {
                return fail(ErrorKind::config,
                            fmt::format("{}clusters.{}.accelerators: '{}' is not NAME:COUNT", config_where(c),
                                        c.name, value.get<std::string>()));
            }
            settings.accelerator = *acc;
        } else if (key == "cancel_grace_seconds" && value.is_string()) {
            auto n = parse_positive_int(value.get<std::string>());
            if (!n) {
                return fail(ErrorKind::config, fmt::format("{}clusters.{}.cancel_grace_seconds: {}",
                                                           config_where(c), c.name, n.error()));
            }
            settings.cancel_grace = std::chrono::seconds(*n);
        } else {
            return fail(ErrorKind::config,
                        fmt::format("{}clusters.{}.{}: unknown setting for a local cluster "
                                    "(known: accelerators, cancel_grace_seconds)",
                                    config_where(c), c.name, key));
        }
    }
    return std::make_unique<local::LocalBackend>(c.name, context.state_dir, settings);
}

Result<std::unique_ptr<Backend>> make_slurm(const ClusterConfig& c, const BackendContext& context) {
    auto settings = slurm::parse_slurm_settings(c, context.getenv);
    if (!settings) {
        return tl::unexpected(settings.error());
    }
    if (!settings->rest) {
        return fail(ErrorKind::config,
                    fmt::format("{}cluster '{}': needs rest: settings", config_where(c), c.name));
    }
    net::TlsSettings tls;
    tls.ca_file = settings->rest->ca_file;
    auto http = std::make_unique<net::CurlHttpClient>(tls);
    return std::make_unique<slurm::SlurmRestBackend>(c.name, std::move(*settings), context.state_dir,
                                                     std::move(http));
}

Result<std::unique_ptr<Backend>> not_yet(const ClusterConfig& c, const BackendContext&) {
    return fail(ErrorKind::config,
                fmt::format("{}cluster '{}': type {} is not supported by this version of tandem yet",
                            config_where(c), c.name, to_string(c.kind)),
                "remove the cluster from config.yaml, or use a tandem build with that backend");
}

} // namespace

const std::vector<BackendEntry>& backend_table() {
    static const std::vector<BackendEntry> table{
        {BackendKind::local, "this machine, detached process groups", make_local},
        {BackendKind::slurm, "Slurm over slurmrestd (JWT); SSH comes next", make_slurm},
        {BackendKind::kubernetes, "Kubernetes batch/v1 Jobs (not yet available)", not_yet},
    };
    return table;
}

Result<std::unique_ptr<Backend>> make_backend(const ClusterConfig& cluster, const BackendContext& context) {
    for (const auto& entry : backend_table()) {
        if (entry.kind == cluster.kind) {
            return entry.create(cluster, context);
        }
    }
    return fail(ErrorKind::internal, fmt::format("no backend for cluster '{}'", cluster.name));
}

} // namespace tandem::backends
