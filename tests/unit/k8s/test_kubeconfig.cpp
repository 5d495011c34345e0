// Kubeconfig loading: one file, KUBECONFIG lists merged as kubectl merges them, the ~/.kube/config default,
// relative paths, *-data decoding, token files.

#include <catch2/catch.hpp>

#include "backends/k8s/kubeconfig.hpp"
#include "kubeconfig_test_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using namespace tandem::k8s::test;

namespace {

Kubeconfig load_ok(const GetEnv& env) {
    auto config = load_kubeconfig(env);
    INFO((config ? std::string() : config.error().message));
    REQUIRE(config);
    return *config;
}

const KubeContext& context(const Kubeconfig& config, const std::string& name) {
    const KubeContext* ctx = config.find(name);
    INFO("context " << name);
    REQUIRE(ctx != nullptr);
    return *ctx;
}

} // namespace

TEST_CASE("a single kubeconfig: contexts, current-context, namespace, decoded data, token", "[kubeconfig]") {
    const std::string file = k_fixtures + "/single.yaml";
    auto config = load_ok(env_of({{"KUBECONFIG", file}}));
    REQUIRE(config.files == std::vector<std::string>{file});
    REQUIRE(config.current_context == "dev");
    REQUIRE(config.contexts.size() == 2);
    CHECK(config.contexts[0].name == "dev");
    CHECK(config.contexts[1].name == "prod");

    const auto& dev = context(config, "dev");
    CHECK(dev.error.empty());
    CHECK(dev.server == "https://dev.example.com:6443"); // trailing slash dropped
    CHECK(dev.namespace_name == "team-a");
    CHECK(dev.cluster_name == "dev-cluster");
    CHECK(dev.user_name == "bob");
    CHECK(dev.source == file);
    CHECK(dev.tls.ca_pem == read_text(k_fixtures + "/relative/certs/ca.pem"));
    CHECK(dev.tls.ca_file.empty());
    CHECK(dev.tls.client_cert_pem == read_text(k_fixtures + "/relative/certs/client.pem"));
    CHECK(dev.tls.client_key_pem == read_text(k_fixtures + "/relative/certs/client-key.pem"));
    CHECK_FALSE(dev.tls.insecure_skip_verify);
    CHECK(dev.token.empty());
    CHECK_FALSE(dev.exec);

    const auto& prod = context(config, "prod");
    CHECK(prod.error.empty());
    CHECK(prod.server == "https://10.0.0.1");
    CHECK(prod.namespace_name == "default");
    CHECK(prod.tls.insecure_skip_verify); // only because the kubeconfig says so
    CHECK(prod.token == "fixture-token-alice");
    CHECK(prod.token_file.empty());
}

TEST_CASE("KUBECONFIG with two files: the first to define a name wins", "[kubeconfig]") {
    const std::string a = k_fixtures + "/merge/a.yaml";
    const std::string b = k_fixtures + "/merge/b.yaml";
    auto config = load_ok(env_of({{"KUBECONFIG", a + ":" + b}}));
    REQUIRE(config.files == std::vector<std::string>{a, b});
    CHECK(config.current_context == "a-only"); // from the first file that sets it

    std::vector<std::string> names;
    for (const auto& c : config.contexts) {
        names.push_back(c.name);
    }
    CHECK(names == std::vector<std::string>{"shared", "a-only", "b-only"});

    // Context "shared" comes from a.yaml, with a.yaml's cluster and user of that name.
    const auto& shared = context(config, "shared");
    CHECK(shared.source == a);
    CHECK(shared.server == "https://a.example:6443");
    CHECK(shared.token == "fixture-token-a");
    CHECK(shared.namespace_name == "default");

    // A context from b.yaml may use a cluster only b.yaml defines and a user a.yaml defines first.
    const auto& b_only = context(config, "b-only");
    CHECK(b_only.source == b);
    CHECK(b_only.server == "https://b-only.example:6443");
    CHECK(b_only.token == "fixture-token-a");

    SECTION("the other order flips every choice") {
        auto flipped = load_ok(env_of({{"KUBECONFIG", b + ":" + a}}));
        CHECK(flipped.current_context == "b-only");
        const auto& s = context(flipped, "shared");
        CHECK(s.server == "https://b-only.example:6443");
        CHECK(s.token == "fixture-token-b-user");
        CHECK(s.namespace_name == "from-b");
    }
}

TEST_CASE("KUBECONFIG: missing files are skipped, empty entries and repeats ignored", "[kubeconfig]") {
    TempDir tmp;
    const std::string a = k_fixtures + "/merge/a.yaml";
    const std::string empty = k_fixtures + "/merge/empty.yaml";
    const std::string missing = tmp.path() + "/does-not-exist.yaml";
    auto config = load_ok(env_of({{"KUBECONFIG", "::" + missing + ":" + empty + "::" + a + ":" + a}}));
    CHECK(config.files == std::vector<std::string>{empty, a});
    CHECK(config.contexts.size() == 2);
    CHECK(config.current_context == "a-only");

    SECTION("only missing files: an empty config, not an error") {
        auto none = load_ok(env_of({{"KUBECONFIG", missing}, {"HOME", tmp.path()}}));
        CHECK(none.files.empty());
        CHECK(none.contexts.empty());
        CHECK(none.current_context.empty());
    }
}

TEST_CASE("without KUBECONFIG, $HOME/.kube/config", "[kubeconfig]") {
    TempDir tmp;
    SECTION("absent: empty") {
        auto config = load_ok(env_of({{"HOME", tmp.path()}}));
        CHECK(config.files.empty());
        CHECK(config.contexts.empty());
    }
    SECTION("present") {
        const std::string path = tmp.write(".kube/config", read_text(k_fixtures + "/merge/b.yaml"));
        auto config = load_ok(env_of({{"HOME", tmp.path()}, {"KUBECONFIG", ""}}));
        CHECK(config.files == std::vector<std::string>{path});
        CHECK(config.current_context == "b-only");
        CHECK(context(config, "b-only").source == path);
    }
    SECTION("no HOME either: empty") {
        auto config = load_ok(env_of({}));
        CHECK(config.contexts.empty());
    }
}

TEST_CASE("relative paths resolve against the folder of the file that holds them", "[kubeconfig]") {
    const std::string dir = k_fixtures + "/relative";
    // Loaded while the working directory is elsewhere: only the file's folder can make these right.
    auto config = load_ok(env_of({{"KUBECONFIG", dir + "/config"}}));

    const auto& cert = context(config, "cert");
    CHECK(cert.error.empty());
    CHECK(cert.tls.ca_file == dir + "/certs/ca.pem");
    CHECK(cert.tls.client_cert_file == dir + "/certs/client.pem");
    CHECK(cert.tls.client_key_file == dir + "/certs/client-key.pem"); // "./" normalised away
    CHECK(cert.tls.ca_pem.empty());

    const auto& token = context(config, "file-token");
    CHECK(token.error.empty());
    CHECK(token.token == "fixture-token-from-file"); // newline trimmed
    CHECK(token.token_file == dir + "/certs/token");

    const auto& exec = context(config, "exec");
    REQUIRE(exec.exec);
    CHECK(exec.exec->command == dir + "/bin/plugin"); // has a '/': relative to the kubeconfig
    CHECK(exec.exec->api_version == "client.authentication.k8s.io/v1beta1");
    CHECK(exec.exec->args == std::vector<std::string>{"get-token", "--cluster", "c"});
    CHECK(exec.exec->env == std::vector<std::pair<std::string, std::string>>{{"PLUGIN_MODE", "fixture"}});
    CHECK(exec.exec->install_hint == "install the fixture plugin");
    CHECK(exec.exec->provide_cluster_info);
    CHECK(exec.exec->interactive_mode == "IfAvailable"); // v1beta1's default

    const auto& path_exec = context(config, "path-exec");
    REQUIRE(path_exec.exec);
    CHECK(path_exec.exec->command == "gke-gcloud-auth-plugin"); // no '/': looked up on PATH when run
    CHECK(path_exec.exec->interactive_mode == "Never");
}

TEST_CASE("a token file is read when the kubeconfig is loaded, and an inline token wins", "[kubeconfig]") {
    TempDir tmp;
    tmp.write("secrets/tok", "  from-file-token \n");
    const std::string path = tmp.write("config", R"(
clusters:
- name: c
  cluster: {server: "https://c:6443"}
users:
- name: file
  user: {tokenFile: secrets/tok}
- name: both
  user: {token: inline-token, tokenFile: secrets/tok}
contexts:
- {name: file, context: {cluster: c, user: file}}
- {name: both, context: {cluster: c, user: both}}
)");
    auto config = load_ok(env_of({{"KUBECONFIG", path}}));
    CHECK(context(config, "file").token == "from-file-token");
    CHECK(context(config, "file").token_file == tmp.path() + "/secrets/tok");
    CHECK(context(config, "both").token == "inline-token");
}

TEST_CASE("a server without a scheme gets https://", "[kubeconfig]") {
    auto config = parse_kubeconfigs({{"/k/config", R"(
clusters: [{name: c, cluster: {server: "10.1.2.3:6443"}}]
contexts: [{name: x, context: {cluster: c}}]
)"}});
    REQUIRE(config);
    REQUIRE(config->contexts.size() == 1);
    CHECK(config->contexts[0].server == "https://10.1.2.3:6443");
    CHECK(config->contexts[0].user_name.empty()); // anonymous is allowed
    CHECK(config->contexts[0].error.empty());

    // A path after the host (Rancher's proxy) is kept; only trailing slashes go.
    auto rancher = parse_kubeconfigs({{"/k/config", R"(
clusters: [{name: c, cluster: {server: "https://rancher.example/k8s/clusters/c-abc//"}}]
contexts: [{name: x, context: {cluster: c}}]
)"}});
    REQUIRE(rancher);
    CHECK(rancher->contexts[0].server == "https://rancher.example/k8s/clusters/c-abc");
}
