// One kubeconfig file's entries, read with yaml-cpp (a kubeconfig is YAML or JSON). Field names are
// client-go's v1 Config (note `tokenFile`, `installHint`: camelCase where client-go has it). Unknown fields
// are ignored as kubectl ignores them, unless they are a near miss of a known one, which would otherwise
// silently drop a credential.

#include "backends/k8s/kubeconfig_entries.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <unistd.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "backends/k8s/kubeconfig_data.hpp"
#include "core/spec_loader.hpp"

namespace tandem::k8s::detail {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view k_exec_v1beta1 = "client.authentication.k8s.io/v1beta1";
constexpr std::string_view k_exec_v1 = "client.authentication.k8s.io/v1";
constexpr std::string_view k_exec_v1alpha1 = "client.authentication.k8s.io/v1alpha1";

SourceLoc loc_of(const std::string& file, const YAML::Mark& m) {
    return m.line < 0 ? SourceLoc{file, 1, 1} : SourceLoc{file, m.line + 1, m.column + 1};
}

// Where relative paths of one file resolve, and how its positions are written.
struct FileInfo {
    std::string path;
    fs::path dir;

    std::string resolve(const std::string& p) const {
        if (p.empty() || fs::path(p).is_absolute()) {
            return p;
        }
        return (dir / p).lexically_normal().string();
    }
};

// Reads the body of one cluster/user/context entry, keeping its first problem.
class EntryReader {
public:
    EntryReader(const FileInfo& file, std::string prefix, std::optional<EntryProblem>& problem)
        : m_file(file), m_prefix(std::move(prefix)), m_problem(problem) {}

    std::string field(const std::string& key) const { return key.empty() ? m_prefix : m_prefix + "." + key; }

    void problem(const YAML::Node& at, const std::string& key, const std::string& message,
                 std::string hint = {}) {
        if (!m_problem) {
            m_problem = EntryProblem{format_diagnostic({loc_of(m_file.path, at.Mark()), field(key), message}),
                                     std::move(hint)};
        }
    }

    // A string field; null is empty. Values are never echoed (any of them may be a credential).
    std::optional<std::string> string(const YAML::Node& node, const std::string& key) {
        if (node.IsNull()) {
            return std::string();
        }
        if (!node.IsScalar()) {
            problem(node, key, fmt::format("must be a string, not a {}", kind_name(node)));
            return std::nullopt;
        }
        return node.Scalar();
    }

    bool boolean(const YAML::Node& node, const std::string& key) {
        if (node.IsNull()) {
            return false;
        }
        bool value = false;
        if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
            problem(node, key, "must be true or false");
        }
        return value;
    }

    // A *-data field: base64 of PEM text.
    std::string pem_data(const YAML::Node& node, const std::string& key) {
        auto text = string(node, key);
        if (!text || text->empty()) {
            return {};
        }
        auto decoded = base64_decode(*text);
        if (!decoded) {
            problem(node, key, "is not valid base64");
            return {};
        }
        if (!looks_like_pem(*decoded)) {
            problem(node, key, "does not decode to PEM (no '-----BEGIN' line)");
            return {};
        }
        return *decoded;
    }

    // A file path field: resolved against the kubeconfig's folder, and checked readable now so the
    // failure names the kubeconfig line rather than surfacing later as a TLS error.
    std::string readable_file(const YAML::Node& node, const std::string& key) {
        auto text = string(node, key);
        if (!text || text->empty()) {
            return {};
        }
        std::string path = m_file.resolve(*text);
        if (::access(path.c_str(), R_OK) != 0) {
            problem(node, key, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
            return {};
        }
        return path;
    }

    const FileInfo& file() const { return m_file; }

    // An unknown key: ignored, unless it is a near miss of a known one.
    void unknown(const YAML::Node& key_node, const std::string& key,
                 const std::vector<std::string_view>& known) {
        if (auto near = closest_match(key, known)) {
            problem(key_node, key, fmt::format("unknown field (did you mean '{}'?)", *near));
        }
    }

    static std::string kind_name(const YAML::Node& node) {
        return node.IsSequence() ? "list" : node.IsMap() ? "mapping" : "scalar";
    }

private:
    const FileInfo& m_file;
    std::string m_prefix;
    std::optional<EntryProblem>& m_problem;
};

void read_cluster(EntryReader& r, YAML::Node body, ClusterEntry& c) {
    static const std::vector<std::string_view> known{"server",
                                                     "certificate-authority",
                                                     "certificate-authority-data",
                                                     "insecure-skip-tls-verify",
                                                     "tls-server-name",
                                                     "proxy-url",
                                                     "disable-compression",
                                                     "extensions"};
    YAML::Node ca_node, insecure_node;
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        const YAML::Node& v = it->second;
        if (key == "server") {
            c.server = r.string(v, key).value_or("");
            while (!c.server.empty() && c.server.back() == '/') {
                c.server.pop_back();
            }
            if (!c.server.empty() && c.server.find("://") == std::string::npos) {
                c.server = "https://" + c.server; // client-go's default for a bare host:port with TLS
            } else if (!c.server.empty() && c.server.rfind("https://", 0) != 0 &&
                       c.server.rfind("http://", 0) != 0) {
                r.problem(v, key, fmt::format("'{}' is not an http(s) URL", c.server));
            }
        } else if (key == "certificate-authority") {
            c.ca_file = r.readable_file(v, key);
            ca_node = v;
        } else if (key == "certificate-authority-data") {
            c.ca_pem = r.pem_data(v, key);
            ca_node = v;
        } else if (key == "insecure-skip-tls-verify") {
            c.insecure = r.boolean(v, key);
            insecure_node = v;
        } else if (key == "tls-server-name" || key == "proxy-url") {
            if (!r.string(v, key).value_or("").empty()) {
                r.problem(v, key, "is not supported by tandem",
                          key == "proxy-url"
                              ? "remove it and set HTTPS_PROXY in the environment (libcurl reads it)"
                              : "remove it, or use a server address that matches the certificate");
            }
        } else if (key != "disable-compression" && key != "extensions") {
            r.unknown(it->first, key, known);
        }
    }
    if (!c.ca_file.empty() && !c.ca_pem.empty()) {
        r.problem(ca_node, "certificate-authority-data",
                  "certificate-authority-data and certificate-authority are both set", "keep one of them");
    }
    if (c.insecure && (!c.ca_file.empty() || !c.ca_pem.empty())) {
        r.problem(insecure_node, "insecure-skip-tls-verify",
                  "specifying a root certificates file with the insecure flag is not allowed",
                  "remove insecure-skip-tls-verify, or the certificate-authority");
    }
}

void read_exec(EntryReader& r, YAML::Node body, UserEntry& u) {
    static const std::vector<std::string_view> known{
        "apiVersion", "command", "args", "env", "installHint", "provideClusterInfo", "interactiveMode"};
    if (!body.IsMap()) {
        r.problem(body, "exec", "must be a mapping");
        return;
    }
    ExecPlugin p;
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        const std::string f = "exec." + key;
        const YAML::Node& v = it->second;
        if (key == "apiVersion") {
            p.api_version = r.string(v, f).value_or("");
        } else if (key == "command") {
            p.command = r.string(v, f).value_or("");
        } else if (key == "installHint") {
            p.install_hint = r.string(v, f).value_or("");
        } else if (key == "provideClusterInfo") {
            p.provide_cluster_info = r.boolean(v, f);
        } else if (key == "interactiveMode") {
            p.interactive_mode = r.string(v, f).value_or("");
            if (!p.interactive_mode.empty() && p.interactive_mode != "Never" &&
                p.interactive_mode != "IfAvailable" && p.interactive_mode != "Always") {
                r.problem(v, f,
                          fmt::format("'{}' is not an interactive mode (Never, IfAvailable or Always)",
                                      p.interactive_mode));
            }
        } else if (key == "args") {
            if (v.IsSequence()) {
                for (std::size_t i = 0; i < v.size(); ++i) {
                    p.args.push_back(r.string(v[i], fmt::format("{}[{}]", f, i)).value_or(""));
                }
            } else if (!v.IsNull()) {
                r.problem(v, f, "must be a list of strings");
            }
        } else if (key == "env") {
            if (v.IsSequence()) {
                for (std::size_t i = 0; i < v.size(); ++i) {
                    const YAML::Node e = v[i];
                    const std::string ef = fmt::format("{}[{}]", f, i);
                    if (!e.IsMap() || !e["name"] || !e["name"].IsScalar() || e["name"].Scalar().empty()) {
                        r.problem(e, ef, "must be a mapping with name and value");
                        continue;
                    }
                    p.env.emplace_back(e["name"].Scalar(),
                                       e["value"] ? r.string(e["value"], ef + ".value").value_or("") : "");
                }
            } else if (!v.IsNull()) {
                r.problem(v, f, "must be a list of {name, value}");
            }
        } else {
            r.unknown(it->first, f, known);
        }
    }
    if (p.api_version.empty()) {
        r.problem(body, "exec.apiVersion", "is required (client.authentication.k8s.io/v1beta1 or v1)");
    } else if (p.api_version == k_exec_v1alpha1) {
        r.problem(body["apiVersion"], "exec.apiVersion",
                  "client.authentication.k8s.io/v1alpha1 is no longer supported (kubectl 1.24 removed it)",
                  "update the plugin and set apiVersion: client.authentication.k8s.io/v1beta1");
    } else if (p.api_version != k_exec_v1beta1 && p.api_version != k_exec_v1) {
        r.problem(body["apiVersion"], "exec.apiVersion",
                  fmt::format("'{}' is not an exec credential API version (use {} or {})", p.api_version,
                              k_exec_v1beta1, k_exec_v1));
    }
    if (p.command.empty()) {
        r.problem(body, "exec.command", "is required");
    } else if (p.command.find('/') != std::string::npos) {
        p.command = r.file().resolve(p.command);
    }
    if (p.interactive_mode.empty()) {
        if (p.api_version == k_exec_v1) {
            r.problem(body, "exec.interactiveMode", "is required for client.authentication.k8s.io/v1",
                      "add interactiveMode: Never (or IfAvailable)");
        }
        p.interactive_mode = "IfAvailable";
    }
    u.exec = std::move(p);
}

void read_user(EntryReader& r, YAML::Node body, UserEntry& u) {
    static const std::vector<std::string_view> known{"client-certificate",
                                                     "client-certificate-data",
                                                     "client-key",
                                                     "client-key-data",
                                                     "token",
                                                     "tokenFile",
                                                     "username",
                                                     "password",
                                                     "auth-provider",
                                                     "exec",
                                                     "as",
                                                     "as-uid",
                                                     "as-groups",
                                                     "as-user-extra",
                                                     "extensions"};
    YAML::Node cert_node, key_node;
    bool cert_file_and_data = false, key_file_and_data = false;
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        const YAML::Node& v = it->second;
        if (key == "client-certificate" || key == "client-certificate-data") {
            auto& target = key == "client-certificate" ? u.client_cert_file : u.client_cert_pem;
            cert_file_and_data = !u.client_cert_file.empty() || !u.client_cert_pem.empty();
            target = key == "client-certificate" ? r.readable_file(v, key) : r.pem_data(v, key);
            cert_node = v;
        } else if (key == "client-key" || key == "client-key-data") {
            auto& target = key == "client-key" ? u.client_key_file : u.client_key_pem;
            key_file_and_data = !u.client_key_file.empty() || !u.client_key_pem.empty();
            target = key == "client-key" ? r.readable_file(v, key) : r.pem_data(v, key);
            key_node = v;
        } else if (key == "token") {
            u.token = r.string(v, key).value_or("");
        } else if (key == "tokenFile") {
            u.token_file = r.string(v, key).value_or("");
            if (!u.token_file.empty()) {
                u.token_file = r.file().resolve(u.token_file);
                std::string why;
                if (auto text = read_file(u.token_file, why); !text) {
                    r.problem(v, key, fmt::format("cannot read {}: {}", u.token_file, why));
                } else if (u.token.empty() && (u.token = trim(*text)).empty()) {
                    r.problem(v, key, fmt::format("{} is empty", u.token_file));
                }
            }
        } else if (key == "username" || key == "password") {
            if (!r.string(v, key).value_or("").empty()) {
                r.problem(v, key, "basic authentication (username/password) is not supported by tandem",
                          "use a token, a client certificate or an exec plugin");
            }
        } else if (key == "auth-provider") {
            const std::string name = v.IsMap() && v["name"] && v["name"].IsScalar() ? v["name"].Scalar() : "";
            r.problem(v, key,
                      name.empty() ? std::string("is not supported by tandem")
                                   : fmt::format("'{}' is not supported by tandem", name),
                      "use the provider's exec credential plugin instead (e.g. gke-gcloud-auth-plugin, "
                      "kubelogin); kubectl 1.26 removed the built-in providers too");
        } else if (key == "as" || key == "as-uid" || key == "as-groups" || key == "as-user-extra") {
            if (!v.IsNull() && !(v.IsScalar() && v.Scalar().empty())) {
                r.problem(v, key, "impersonation is not supported by tandem");
            }
        } else if (key == "exec") {
            read_exec(r, v, u);
        } else if (key != "extensions") {
            r.unknown(it->first, key, known);
        }
    }
    if (cert_file_and_data) {
        r.problem(cert_node, "client-certificate-data",
                  "client-certificate-data and client-certificate are both set", "keep one of them");
    }
    if (key_file_and_data) {
        r.problem(key_node, "client-key-data", "client-key-data and client-key are both set",
                  "keep one of them");
    }
    const bool has_cert = !u.client_cert_file.empty() || !u.client_cert_pem.empty();
    const bool has_key = !u.client_key_file.empty() || !u.client_key_pem.empty();
    if (has_cert != has_key) {
        r.problem(has_cert ? cert_node : key_node, has_cert ? "client-certificate" : "client-key",
                  has_cert ? "is set but client-key is not" : "is set but client-certificate is not",
                  "a client certificate needs its key, and the key its certificate");
    }
}

void read_context(EntryReader& r, YAML::Node body, ContextEntry& c) {
    static const std::vector<std::string_view> known{"cluster", "user", "namespace", "extensions"};
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        const YAML::Node& v = it->second;
        if (key == "cluster") {
            c.cluster = r.string(v, key).value_or("");
        } else if (key == "user") {
            c.user = r.string(v, key).value_or("");
        } else if (key == "namespace") {
            c.namespace_name = r.string(v, key).value_or("");
        } else if (key != "extensions") {
            r.unknown(it->first, key, known);
        }
    }
}

// clusters / users / contexts: a list of {name, <body_key>: {...}}. Shape problems are fatal diagnostics.
template <typename Entry, typename ReadBody>
void read_list(const FileInfo& file, const YAML::Node& root, const std::string& list_key,
               const char* body_key, std::vector<Entry>& out, std::vector<Diagnostic>& diags,
               ReadBody read_body) {
    const YAML::Node list = root[list_key];
    if (!list || list.IsNull()) {
        return;
    }
    if (!list.IsSequence()) {
        diags.push_back({loc_of(file.path, list.Mark()), list_key, "must be a list"});
        return;
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node item = list[i];
        const std::string field = fmt::format("{}[{}]", list_key, i);
        if (!item.IsMap()) {
            diags.push_back({loc_of(file.path, item.Mark()), field,
                             fmt::format("must be a mapping with name and {}", body_key)});
            continue;
        }
        const YAML::Node name = item["name"];
        if (!name || !name.IsScalar() || name.Scalar().empty()) {
            diags.push_back({loc_of(file.path, item.Mark()), field + ".name", "is required"});
            continue;
        }
        if (!names.insert(name.Scalar()).second) {
            diags.push_back({loc_of(file.path, name.Mark()), field + ".name",
                             fmt::format("duplicate name '{}' in {}", name.Scalar(), list_key)});
            continue;
        }
        Entry entry;
        entry.name = name.Scalar();
        EntryReader reader(file, field + "." + body_key, entry.problem);
        const YAML::Node body = item[body_key];
        if (body && body.IsMap()) {
            read_body(reader, body, entry);
        } else if (body && !body.IsNull()) {
            reader.problem(body, "", "must be a mapping");
        }
        out.push_back(std::move(entry));
    }
}

} // namespace

Result<FileEntries> parse_kubeconfig_file(const std::string& path, const std::string& text) {
    std::error_code ec;
    FileInfo file{path, fs::absolute(path, ec).parent_path()};
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        return fail(ErrorKind::config,
                    format_diagnostic({loc_of(path, e.mark), "", "invalid YAML: " + e.msg}));
    }
    FileEntries entries;
    if (!root || root.IsNull()) {
        return entries;
    }
    if (!root.IsMap()) {
        return fail(ErrorKind::config,
                    format_diagnostic({loc_of(path, root.Mark()), "", "a kubeconfig must be a mapping"}));
    }
    std::vector<Diagnostic> diags;
    static const std::vector<std::string_view> top{"apiVersion", "kind",     "preferences",     "clusters",
                                                   "users",      "contexts", "current-context", "extensions"};
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        if (std::find(top.begin(), top.end(), key) != top.end()) {
            continue;
        }
        if (auto near = closest_match(key, top)) {
            diags.push_back({loc_of(path, it->first.Mark()), key,
                             fmt::format("unknown field (did you mean '{}'?)", *near)});
        }
    }
    if (const YAML::Node kind = root["kind"]; kind && kind.IsScalar() && kind.Scalar() != "Config") {
        diags.push_back({loc_of(path, kind.Mark()), "kind",
                         fmt::format("'{}' is not a kubeconfig (kind must be Config)", kind.Scalar())});
    }
    read_list(file, root, "clusters", "cluster", entries.clusters, diags, read_cluster);
    read_list(file, root, "users", "user", entries.users, diags, read_user);
    read_list(file, root, "contexts", "context", entries.contexts, diags, read_context);
    if (const YAML::Node cc = root["current-context"]; cc && !cc.IsNull()) {
        if (cc.IsScalar()) {
            entries.current_context = cc.Scalar();
        } else {
            diags.push_back({loc_of(path, cc.Mark()), "current-context", "must be a string"});
        }
    }
    if (!diags.empty()) {
        return fail(ErrorKind::config, format_diagnostics(diags));
    }
    return entries;
}

} // namespace tandem::k8s::detail
