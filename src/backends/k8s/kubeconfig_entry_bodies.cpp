// The bodies of kubeconfig cluster and user entries. Field names are client-go's v1 Config (note
// `tokenFile`, `installHint`: camelCase where client-go has it). Unknown fields are ignored as kubectl
// ignores them, unless they are a near miss of a known one, which would otherwise silently drop a
// credential.

#include "backends/k8s/kubeconfig_reader.hpp"

namespace tandem::k8s::detail {

namespace {

constexpr std::string_view k_exec_v1beta1 = "client.authentication.k8s.io/v1beta1";
constexpr std::string_view k_exec_v1 = "client.authentication.k8s.io/v1";
constexpr std::string_view k_exec_v1alpha1 = "client.authentication.k8s.io/v1alpha1";

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
        const YAML::Node v = it->second; // a copy: `it->` yields a temporary
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

} // namespace

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
        const YAML::Node v = it->second; // a copy: `it->` yields a temporary
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
        const YAML::Node v = it->second; // a copy: `it->` yields a temporary
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

} // namespace tandem::k8s::detail
