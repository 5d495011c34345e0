// Kubeconfig problems: a malformed file fails the load with file:line:col; a problem inside one cluster or
// user entry breaks only the contexts that use it. No message carries a credential.

#include <catch2/catch.hpp>

#include "backends/k8s/kubeconfig.hpp"
#include "kubeconfig_test_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using namespace tandem::k8s::test;

namespace {

const std::string k_ca_data =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFBQUEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";

std::string load_error(const std::string& text) {
    auto config = parse_kubeconfigs({{"/k/config", text}});
    REQUIRE_FALSE(config);
    CHECK(config.error().kind == ErrorKind::config);
    return config.error().message;
}

// The error of context `name` in a config that must load.
KubeContext broken_context(const std::string& text, const std::string& name) {
    auto config = parse_kubeconfigs({{"/k/config", text}});
    INFO((config ? std::string() : config.error().message));
    REQUIRE(config);
    const KubeContext* ctx = config->find(name);
    REQUIRE(ctx != nullptr);
    return *ctx;
}

} // namespace

TEST_CASE("a malformed kubeconfig fails the load with file:line:col", "[kubeconfig]") {
    CHECK_THAT(load_error("clusters: [\n  {name: a\n"),
               Catch::StartsWith("/k/config:") && Catch::Contains(": invalid YAML: "));
    CHECK(load_error("- a\n- b\n") == "/k/config:1:1: a kubeconfig must be a mapping");
    CHECK(load_error("apiVersion: v1\nclusters: {a: b}\n") == "/k/config:2:11: clusters: must be a list");
    CHECK(load_error("users:\n- user: {token: x}\n") == "/k/config:2:3: users[0].name: is required");
    CHECK(load_error("contexts:\n- name: a\n- name: a\n") ==
          "/k/config:3:9: contexts[1].name: duplicate name 'a' in contexts");
    CHECK(load_error("kind: Pod\n") ==
          "/k/config:1:7: kind: 'Pod' is not a kubeconfig (kind must be Config)");
    CHECK(load_error("context:\n- name: a\n") ==
          "/k/config:1:1: context: unknown field (did you mean 'contexts'?)");
    CHECK(load_error("current-context: [a]\n") == "/k/config:1:18: current-context: must be a string");

    SECTION("every problem of the file at once, one per line") {
        CHECK(load_error("clusters: 1\nusers: 2\n") ==
              "/k/config:1:11: clusters: must be a list\n/k/config:2:8: users: must be a list");
    }
}

TEST_CASE("load_kubeconfig: an unreadable file in KUBECONFIG is an error, a malformed one names the file",
          "[kubeconfig]") {
    TempDir tmp;
    auto dir = load_kubeconfig(env_of({{"KUBECONFIG", tmp.path()}}));
    REQUIRE_FALSE(dir);
    CHECK(dir.error().message == "cannot read kubeconfig " + tmp.path() + ": is a directory");

    const std::string good = k_fixtures + "/merge/a.yaml";
    const std::string bad = tmp.write("bad.yaml", "users: 3\n");
    auto config = load_kubeconfig(env_of({{"KUBECONFIG", good + ":" + bad}}));
    REQUIRE_FALSE(config);
    CHECK(config.error().message == bad + ":1:8: users: must be a list");
}

TEST_CASE("a context naming an unknown cluster or user is broken alone", "[kubeconfig]") {
    const std::string text = R"(clusters:
- {name: c, cluster: {server: "https://c:6443"}}
users:
- {name: u, user: {token: fixture-secret-token}}
contexts:
- {name: good, context: {cluster: c, user: u}}
- {name: ghost-user, context: {cluster: c, user: ghost}}
- {name: ghost-cluster, context: {cluster: nowhere, user: u}}
- {name: no-cluster, context: {user: u}}
)";
    auto config = parse_kubeconfigs({{"/k/config", text}});
    REQUIRE(config);
    REQUIRE(config->contexts.size() == 4);
    CHECK(config->find("good")->error.empty());
    CHECK(config->find("good")->token == "fixture-secret-token");
    CHECK(config->find("ghost-user")->error ==
          "context 'ghost-user' names user 'ghost', which no kubeconfig file defines");
    CHECK(config->find("ghost-cluster")->error ==
          "context 'ghost-cluster' names cluster 'nowhere', which no kubeconfig file defines");
    CHECK_FALSE(config->find("ghost-cluster")->hint.empty());
    CHECK(config->find("no-cluster")->error == "context 'no-cluster' in /k/config names no cluster");
}

TEST_CASE("a cluster without a server breaks its contexts", "[kubeconfig]") {
    auto ctx = broken_context(
        "clusters: [{name: c, cluster: {}}]\ncontexts: [{name: x, context: {cluster: c}}]\n", "x");
    CHECK(ctx.error == "cluster 'c' in /k/config has no server");
}

TEST_CASE("insecure-skip-tls-verify with a CA is refused, as kubectl refuses it", "[kubeconfig]") {
    const std::string with_data = R"(clusters:
- name: c
  cluster:
    server: https://c:6443
    certificate-authority-data: )" +
                                  k_ca_data + R"(
    insecure-skip-tls-verify: true
contexts: [{name: x, context: {cluster: c}}]
)";
    auto ctx = broken_context(with_data, "x");
    CHECK(ctx.error == "/k/config:6:31: clusters[0].cluster.insecure-skip-tls-verify: specifying a root "
                       "certificates file with the insecure flag is not allowed");
    CHECK(ctx.hint == "remove insecure-skip-tls-verify, or the certificate-authority");

    TempDir tmp;
    tmp.write("ca.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    const std::string path = tmp.write("config", R"(clusters:
- name: c
  cluster: {server: "https://c", certificate-authority: ca.pem, insecure-skip-tls-verify: true}
contexts: [{name: x, context: {cluster: c}}]
)");
    auto config = load_kubeconfig(env_of({{"KUBECONFIG", path}}));
    REQUIRE(config);
    CHECK_THAT(
        config->find("x")->error,
        Catch::EndsWith("insecure-skip-tls-verify: specifying a root certificates file with the insecure "
                        "flag is not allowed"));

    SECTION("insecure alone is honoured; false is false") {
        auto ok = parse_kubeconfigs({{"/k/config", R"(clusters:
- {name: a, cluster: {server: "https://a", insecure-skip-tls-verify: true}}
- {name: b, cluster: {server: "https://b", insecure-skip-tls-verify: false}}
contexts: [{name: a, context: {cluster: a}}, {name: b, context: {cluster: b}}]
)"}});
        REQUIRE(ok);
        CHECK(ok->find("a")->tls.insecure_skip_verify);
        CHECK_FALSE(ok->find("b")->tls.insecure_skip_verify);
        CHECK(ok->find("a")->error.empty());
    }
}

TEST_CASE("bad entry fields: exact messages, only the contexts using the entry break", "[kubeconfig]") {
    const std::string text = R"(clusters:
- name: c
  cluster: {server: "https://c:6443"}
- name: bad-ca
  cluster: {server: "https://c:6443", certificate-authority-data: "not base64!"}
- name: not-pem
  cluster: {server: "https://c:6443", certificate-authority-data: aGVsbG8=}
- name: missing-ca
  cluster: {server: "https://c:6443", certificate-authority: /nonexistent/ca.pem}
- name: sni
  cluster: {server: "https://c:6443", tls-server-name: kubernetes}
- name: ftp
  cluster: {server: "ftp://c"}
users:
- name: basic
  user: {username: admin, password: fixture-secret-password}
- name: gcp
  user:
    auth-provider: {name: gcp, config: {access-token: fixture-secret-token}}
- name: half-cert
  user: {client-certificate-data: )" +
                             k_ca_data + R"(}
- name: typo
  user: {token-file: /tmp/t}
- name: missing-token-file
  user: {tokenFile: /nonexistent/token}
- name: impersonate
  user: {token: fixture-secret-token, as: admin}
contexts:
- {name: fine, context: {cluster: c}}
- {name: bad-ca, context: {cluster: bad-ca}}
- {name: not-pem, context: {cluster: not-pem}}
- {name: missing-ca, context: {cluster: missing-ca}}
- {name: sni, context: {cluster: sni}}
- {name: ftp, context: {cluster: ftp}}
- {name: basic, context: {cluster: c, user: basic}}
- {name: gcp, context: {cluster: c, user: gcp}}
- {name: half-cert, context: {cluster: c, user: half-cert}}
- {name: typo, context: {cluster: c, user: typo}}
- {name: missing-token-file, context: {cluster: c, user: missing-token-file}}
- {name: impersonate, context: {cluster: c, user: impersonate}}
)";
    auto config = parse_kubeconfigs({{"/k/config", text}});
    REQUIRE(config);
    auto error = [&](const std::string& name) { return config->find(name)->error; };
    CHECK(error("fine").empty());
    CHECK(error("bad-ca") ==
          "/k/config:5:67: clusters[1].cluster.certificate-authority-data: is not valid base64");
    CHECK(error("not-pem") == "/k/config:7:67: clusters[2].cluster.certificate-authority-data: does not "
                              "decode to PEM (no '-----BEGIN' line)");
    CHECK(error("missing-ca") == "/k/config:9:62: clusters[3].cluster.certificate-authority: cannot read "
                                 "/nonexistent/ca.pem: No such file or "
                                 "directory");
    CHECK(error("sni") == "/k/config:11:56: clusters[4].cluster.tls-server-name: is not supported by tandem");
    CHECK(error("ftp") == "/k/config:13:21: clusters[5].cluster.server: 'ftp://c' is not an http(s) URL");
    CHECK(error("basic") == "/k/config:16:20: users[0].user.username: basic authentication "
                            "(username/password) is not supported by tandem");
    CHECK(config->find("basic")->hint == "use a token, a client certificate or an exec plugin");
    CHECK(error("gcp") == "/k/config:19:20: users[1].user.auth-provider: 'gcp' is not supported by tandem");
    CHECK_THAT(config->find("gcp")->hint, Catch::Contains("gke-gcloud-auth-plugin"));
    CHECK(error("half-cert") ==
          "/k/config:21:35: users[2].user.client-certificate: is set but client-key is not");
    CHECK(error("typo") ==
          "/k/config:23:10: users[3].user.token-file: unknown field (did you mean 'tokenFile'?)");
    CHECK(error("missing-token-file") == "/k/config:25:21: users[4].user.tokenFile: cannot read "
                                         "/nonexistent/token: No such file or directory");
    CHECK(error("impersonate") ==
          "/k/config:27:43: users[5].user.as: impersonation is not supported by tandem");

    for (const auto& ctx : config->contexts) {
        INFO(ctx.name);
        CHECK_THAT(ctx.error, !Catch::Contains("fixture-secret"));
        CHECK_THAT(ctx.hint, !Catch::Contains("fixture-secret"));
    }
}

TEST_CASE("CA, client certificate and key given both as file and as data are refused", "[kubeconfig]") {
    TempDir tmp;
    tmp.write("ca.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    const std::string path =
        tmp.write("config", "clusters:\n"
                            "- {name: c, cluster: {server: \"https://c\"}}\n"
                            "- {name: both, cluster: {server: \"https://c\", "
                            "certificate-authority: ca.pem, certificate-authority-data: " +
                                k_ca_data +
                                "}}\n"
                                "users:\n"
                                "- {name: u, user: {client-certificate: ca.pem, "
                                "client-certificate-data: " +
                                k_ca_data +
                                ", client-key: ca.pem}}\n"
                                "contexts:\n"
                                "- {name: x, context: {cluster: both}}\n"
                                "- {name: y, context: {cluster: c, user: u}}\n");
    auto config = load_kubeconfig(env_of({{"KUBECONFIG", path}}));
    REQUIRE(config);
    CHECK_THAT(
        config->find("x")->error,
        Catch::EndsWith("clusters[1].cluster.certificate-authority-data: certificate-authority-data and "
                        "certificate-authority are both set"));
    CHECK_THAT(config->find("y")->error,
               Catch::EndsWith("users[0].user.client-certificate-data: client-certificate-data and "
                               "client-certificate are both set"));
}

TEST_CASE("exec entries: required fields and refused versions", "[kubeconfig]") {
    auto exec_error = [](const std::string& exec) {
        const std::string text = "clusters: [{name: c, cluster: {server: \"https://c\"}}]\n"
                                 "users:\n- name: u\n  user:\n    exec: " +
                                 exec + "\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n";
        return broken_context(text, "x").error;
    };
    CHECK(exec_error("{apiVersion: client.authentication.k8s.io/v1alpha1, command: p}") ==
          "/k/config:5:24: users[0].user.exec.apiVersion: client.authentication.k8s.io/v1alpha1 is no longer "
          "supported (kubectl 1.24 removed it)");
    CHECK(exec_error("{apiVersion: v2, command: p}") ==
          "/k/config:5:24: users[0].user.exec.apiVersion: 'v2' is not an exec credential API version (use "
          "client.authentication.k8s.io/v1beta1 or client.authentication.k8s.io/v1)");
    CHECK(exec_error("{command: p}") == "/k/config:5:11: users[0].user.exec.apiVersion: is required "
                                        "(client.authentication.k8s.io/v1beta1 or v1)");
    CHECK(exec_error("{apiVersion: client.authentication.k8s.io/v1beta1}") ==
          "/k/config:5:11: users[0].user.exec.command: is required");
    CHECK(exec_error("{apiVersion: client.authentication.k8s.io/v1, command: p}") ==
          "/k/config:5:11: users[0].user.exec.interactiveMode: is required for "
          "client.authentication.k8s.io/v1");
    CHECK(
        exec_error("{apiVersion: client.authentication.k8s.io/v1, command: p, interactiveMode: Sometimes}") ==
        "/k/config:5:86: users[0].user.exec.interactiveMode: 'Sometimes' is not an interactive mode (Never, "
        "IfAvailable or Always)");
    CHECK(exec_error("{apiVersion: client.authentication.k8s.io/v1beta1, command: p, env: [{value: x}]}") ==
          "/k/config:5:80: users[0].user.exec.env[0]: must be a mapping with name and value");
    CHECK(exec_error(
              "{apiVersion: client.authentication.k8s.io/v1beta1, command: p, provideClusterInfo: maybe}") ==
          "/k/config:5:94: users[0].user.exec.provideClusterInfo: must be true or false");
}
