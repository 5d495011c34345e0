#include "backends/registry.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backends/config_errors.hpp"
#include "backends/k8s/k8s_factory.hpp"
#include "backends/local/local_backend.hpp"
#include "backends/slurm/slurm_config.hpp"
#include "backends/slurm/slurm_rest_backend.hpp"
#include "backends/slurm/slurm_ssh_backend.hpp"
#include "core/quantity.hpp"
#include "net/http_client.hpp"
#include "net/ssh_host.hpp"

namespace tandem::backends {

namespace {

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

// rest: only -> slurmrestd; ssh: only -> the Slurm CLI over SSH; both -> slurmrestd for control, with the
// SSH connection for workdir upload and logs.
Result<std::unique_ptr<Backend>> make_slurm(const ClusterConfig& c, const BackendContext& context) {
    auto settings = slurm::parse_slurm_settings(c, context.getenv);
    if (!settings) {
        return tl::unexpected(settings.error());
    }
    std::unique_ptr<net::RemoteHost> host;
    if (settings->ssh) {
        const auto& s = *settings->ssh;
        net::SshTarget target{s.host,          s.port.value_or(0), s.user,
                              s.identity_file, s.known_hosts,      s.proxy_jump};
        net::SshOptions options;
        options.home = context.getenv("HOME").value_or("");
        options.connect_timeout = settings->timeout;
        options.io_timeout = 2 * settings->timeout;
        auto connected = net::connect_ssh(target, options); // lazy: nothing is sent until the first call
        if (!connected) {
            Error e = connected.error();
            e.message = fmt::format("{}cluster '{}': {}", config_where(c), c.name, e.message);
            return tl::unexpected(e);
        }
        host = std::move(*connected);
    }
    if (!settings->rest) {
        return std::make_unique<slurm::SlurmSshBackend>(c.name, std::move(*settings), context.state_dir,
                                                        std::move(host));
    }
    net::TlsSettings tls;
    tls.ca_file = settings->rest->ca_file;
    auto http = std::make_unique<net::CurlHttpClient>(tls);
    auto rest = std::make_unique<slurm::SlurmRestBackend>(c.name, std::move(*settings), context.state_dir,
                                                          std::move(http));
    if (host) {
        rest->attach_files(std::move(host));
    }
    return rest;
}

Result<std::unique_ptr<Backend>> make_k8s(const ClusterConfig& c, const BackendContext& context) {
    return k8s::make_k8s_backend(c, context.state_dir, context.getenv);
}

// Every context of the user's kubeconfig (and the in-cluster one), unless `discover_kubeconfig: false`.
std::vector<ClusterConfig> discover_k8s(const Config& config, const GetEnv& getenv) {
    return config.discover_kubeconfig ? k8s::discover_k8s_clusters(getenv) : std::vector<ClusterConfig>{};
}

bool always(const ClusterConfig&) {
    return true;
}

// A slurmrestd URL that is not plain http:// without a proxy.
bool slurm_needs_libcurl(const ClusterConfig& cluster) {
    const auto rest = cluster.settings.find("rest");
    if (rest == cluster.settings.end() || !rest->is_object()) {
        return false;
    }
    const auto url = rest->find("url");
    return url != rest->end() && url->is_string() && net::needs_libcurl(url->get<std::string>());
}

} // namespace

const std::vector<BackendEntry>& backend_table() {
    static const std::vector<BackendEntry> table{
        {BackendKind::local, "this machine, detached process groups", make_local},
        {BackendKind::slurm, "Slurm over slurmrestd (JWT) or over SSH (sbatch, squeue, sacct)", make_slurm,
         nullptr, slurm_needs_libcurl},
        {BackendKind::kubernetes, "Kubernetes batch/v1 Jobs over the API server (kubeconfig contexts)",
         make_k8s, discover_k8s, always},
    };
    return table;
}

bool uses_libcurl(const ClusterConfig& cluster) {
    for (const auto& entry : backend_table()) {
        if (entry.kind == cluster.kind) {
            return entry.needs_libcurl != nullptr && entry.needs_libcurl(cluster);
        }
    }
    return false;
}

void add_discovered_clusters(Config& config, const GetEnv& getenv) {
    auto& clusters = config.clusters;
    for (const auto& entry : backend_table()) {
        if (entry.discover == nullptr || std::any_of(clusters.begin(), clusters.end(), [&](const ClusterConfig& c) {
                return c.kind == entry.kind;
            })) {
            continue;
        }
        for (auto& found : entry.discover(config, getenv)) {
            if (std::none_of(clusters.begin(), clusters.end(),
                             [&](const ClusterConfig& c) { return c.name == found.name; })) {
                clusters.push_back(std::move(found));
            }
        }
    }
}

Result<std::unique_ptr<Backend>> make_backend(const ClusterConfig& cluster, const BackendContext& context) {
    for (const auto& entry : backend_table()) {
        if (entry.kind == cluster.kind) {
            return entry.create(cluster, context);
        }
    }
    return fail(ErrorKind::internal, fmt::format("no backend for cluster '{}'", cluster.name));
}

Error capability_refusal(const Backend& backend, Capability capability, std::int64_t job_id) {
    const std::string& cluster = backend.cluster();
    switch (capability) {
    case Capability::exec:
        if (backend.kind() == BackendKind::slurm) {
            return Error{
                ErrorKind::invalid_spec,
                fmt::format("cluster {} is reached over slurmrestd only, which runs no interactive steps",
                            cluster),
                "add ssh: to the cluster in config.yaml (exec and shell run srun on the login node)"};
        }
        return Error{ErrorKind::invalid_spec, cluster + ": this backend cannot run a command beside a job",
                     ""};
    case Capability::attach:
        return Error{ErrorKind::invalid_spec, cluster + ": attach is not supported on this backend",
                     fmt::format("tandem logs -f {} follows the job's output", job_id)};
    case Capability::group_addresses:
        return Error{ErrorKind::invalid_spec, cluster + ": this backend cannot run job group members", ""};
    case Capability::services:
        return Error{ErrorKind::invalid_spec, cluster + ": services run on Kubernetes clusters only", ""};
    case Capability::watch:
        return Error{ErrorKind::invalid_spec, cluster + ": this backend has no change feed", ""};
    case Capability::element_cancel:
        return Error{ErrorKind::invalid_spec,
                     backend.kind() == BackendKind::kubernetes
                         ? cluster +
                               ": a Kubernetes Indexed Job cannot stop one of its indexes (deleting the "
                               "index's pod makes the Job controller start another)"
                         : cluster + ": this backend cannot cancel one element of a sweep",
                     fmt::format("tandem cancel {} cancels the whole sweep", job_id)};
    case Capability::discovery:
        return Error{ErrorKind::invalid_spec,
                     cluster + ": this backend keeps no record of its own; its jobs are known only to the job "
                               "store that launched them",
                     ""};
    }
    return Error{ErrorKind::internal, cluster + ": unknown capability", ""};
}

} // namespace tandem::backends
