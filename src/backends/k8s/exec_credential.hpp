#pragma once
// Exec credential plugins (client.authentication.k8s.io v1beta1 and v1, the protocol GKE's
// gke-gcloud-auth-plugin, `aws eks get-token` and kubelogin speak). The plugin runs without a shell, with
// our environment plus its `env` plus KUBERNETES_EXEC_INFO, stdin on /dev/null (we never prompt, so
// interactiveMode IfAvailable is treated as Never and Always is refused), a time limit and an output cap.
// Its stderr goes to ours: that is where plugins talk to the user. Its stdout must be an ExecCredential
// whose apiVersion matches the request. No message ever contains the credential.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "backends/k8s/kubeconfig.hpp"
#include "core/error.hpp"

namespace tandem::k8s {

struct ExecResult {
    std::string token;                      // bearer token, or empty when a client certificate was returned
    std::string client_cert_pem;            // PEM text (status.clientCertificateData)
    std::string client_key_pem;             // PEM text (status.clientKeyData)
    std::optional<std::int64_t> expires_at; // status.expirationTimestamp as Unix seconds; none: no expiry
};

struct ExecOptions {
    std::chrono::milliseconds timeout{30'000};
    std::size_t max_output = 1 << 20; // bytes of stdout accepted
};

// Runs `plugin` for `context` (whose server/CA are sent when provideClusterInfo is set). Errors name the
// cluster as k8s/<context> and the plugin command: not found (with installHint) is ErrorKind::config, a
// time-out ErrorKind::timeout, a failing or misbehaving plugin ErrorKind::unauthorized.
Result<ExecResult> run_exec_plugin(const ExecPlugin& plugin, const KubeContext& context,
                                   const ExecOptions& options = {});

// Parses a plugin's stdout (exposed for unit tests). `who` prefixes messages: "k8s/dev: exec plugin 'x'".
Result<ExecResult> parse_exec_credential(const std::string& output, const std::string& api_version,
                                         const std::string& who);

} // namespace tandem::k8s
