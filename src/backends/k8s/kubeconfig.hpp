#pragma once
// Kubeconfig loading as kubectl does it (client-go's clientcmd): `KUBECONFIG` is a ':'-separated list of
// files merged in order (missing files skipped), else `~/.kube/config`. Across the files the first to
// define a cluster, user or context name wins, and `current-context` comes from the first file that sets
// it. Relative paths (certificate-authority, client-certificate, client-key, tokenFile, an exec command
// containing '/') are resolved against the directory of the file that holds them. `*-data` fields are
// base64 PEM and are decoded into memory: nothing is written to disk.
//
// A problem inside one cluster or user entry (an unknown name, unsupported auth, a bad field) breaks only
// the contexts that use it: they carry `error` and the other contexts still work, as `kubectl config
// get-contexts` still lists them. A file that is not a kubeconfig at all is an error for the whole load.
// No HTTP here; exec plugins run only when asked (exec_credential.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "net/http_client.hpp"

namespace tandem::k8s {

// users[].user.exec: a credential plugin speaking the ExecCredential protocol (GKE, EKS, AKS, OIDC...).
struct ExecPlugin {
    std::string api_version; // client.authentication.k8s.io/v1beta1 or /v1 (v1alpha1 is refused: too old)
    std::string command;     // absolute when the kubeconfig gave a path with '/', else looked up on PATH
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    std::string install_hint;
    bool provide_cluster_info = false;
    std::string interactive_mode; // Never, IfAvailable or Always (v1beta1 default: IfAvailable)
};

struct KubeContext {
    std::string name;           // context name; "in-cluster" for the service-account config
    std::string cluster_name;   // the context's cluster and user entries (for messages)
    std::string user_name;      // empty: anonymous
    std::string server;         // https://host:port (no trailing slash)
    std::string namespace_name; // the context's namespace, else "default"
    net::TlsSettings tls;       // ca_file/ca_pem, client cert/key file or pem, insecure_skip_verify
    std::string token;          // bearer token (user.token, or read from tokenFile): a secret
    std::string token_file;     // when the token came from a file (kubectl re-reads it; we read once)
    std::optional<ExecPlugin> exec;
    std::string source; // the file that defined the context (for errors): "/home/u/.kube/config"
    // Non-empty when the context cannot be used: one line, no secrets, e.g.
    // "context 'dev' names user 'bob', which no kubeconfig file defines". Report it only when the
    // context is used.
    std::string error;
    std::string hint; // how to fix `error`, when known
};

struct Kubeconfig {
    std::vector<KubeContext> contexts; // in first-seen order
    std::string current_context;       // may be empty
    std::vector<std::string> files;    // the files read, in order

    const KubeContext* find(const std::string& name) const;
};

// KUBECONFIG (':'-separated; missing files are skipped like kubectl; empty entries ignored), else
// $HOME/.kube/config. Nothing found is an empty Kubeconfig, not an error. An unreadable or malformed file
// is an error (ErrorKind::config) naming file:line:col.
Result<Kubeconfig> load_kubeconfig(const GetEnv& getenv);

// The same from text already read: (path, text) pairs in merge order. Paths are used for messages and to
// resolve relative paths; files named by the config (tokenFile, certificate files) are read/checked here.
Result<Kubeconfig> parse_kubeconfigs(const std::vector<std::pair<std::string, std::string>>& files);

} // namespace tandem::k8s
