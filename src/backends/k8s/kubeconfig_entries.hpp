#pragma once
// Internal to kubeconfig loading: one file's clusters, users and contexts as written, before merging.
// Problems inside an entry's body are kept on the entry (first one only, as one formatted line) so that
// only the contexts using it break; problems with the file's shape fail the whole file.

#include <optional>
#include <string>
#include <vector>

#include "backends/k8s/kubeconfig.hpp"
#include "core/error.hpp"

namespace tandem::k8s::detail {

struct EntryProblem {
    std::string error; // "file:line:col: users[0].user.token-file: message"
    std::string hint;
};

struct ClusterEntry {
    std::string name;
    std::string server;
    std::string ca_file; // absolute
    std::string ca_pem;
    bool insecure = false;
    std::optional<EntryProblem> problem;
};

struct UserEntry {
    std::string name;
    std::string client_cert_file, client_key_file; // absolute
    std::string client_cert_pem, client_key_pem;
    std::string token, token_file;
    std::optional<ExecPlugin> exec;
    std::optional<EntryProblem> problem;
};

struct ContextEntry {
    std::string name;
    std::string cluster, user, namespace_name;
    std::optional<EntryProblem> problem;
};

struct FileEntries {
    std::vector<ClusterEntry> clusters;
    std::vector<UserEntry> users;
    std::vector<ContextEntry> contexts;
    std::string current_context;
};

// `path` names the file in messages; relative paths inside it resolve against its directory. An empty or
// all-comment file is an empty FileEntries (kubectl accepts one).
Result<FileEntries> parse_kubeconfig_file(const std::string& path, const std::string& text);

} // namespace tandem::k8s::detail
