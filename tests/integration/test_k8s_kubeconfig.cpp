// Kubeconfig loading against the real Kubernetes testbed (scripts/testbed/k8s up): every way a kubeconfig
// can carry trust and identity (CA file and data, token, token file, client certificate file and data,
// exec plugin, insecure-skip-tls-verify, in-cluster) is loaded by tandem and used for a real request
// through the net layer. The testbed must be up: when it is not, the tests fail with how to start it.

#include <array>
#include <cstdio>
#include <map>

#include <catch2/catch.hpp>

#include "../unit/k8s/kubeconfig_test_support.hpp"
#include "backends/k8s/exec_credential.hpp"
#include "backends/k8s/in_cluster.hpp"
#include "backends/k8s/kubeconfig.hpp"
#include "backends/k8s/kubeconfig_data.hpp"
#include "net/http_client.hpp"

using namespace tandem;
using namespace tandem::k8s;
using namespace tandem::k8s::test;

namespace {

// KEY=VALUE lines of `scripts/testbed/k8s env`, read once.
const std::map<std::string, std::string>& k8s_env() {
    static const std::map<std::string, std::string> env = [] {
        std::map<std::string, std::string> out;
        const std::string command = std::string(TANDEM_SOURCE_DIR) + "/scripts/testbed/k8s env 2>/dev/null";
        if (FILE* pipe = ::popen(command.c_str(), "r")) {
            std::array<char, 4096> line{};
            while (std::fgets(line.data(), line.size(), pipe)) {
                std::string text(line.data());
                while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
                    text.pop_back();
                }
                if (auto eq = text.find('='); eq != std::string::npos) {
                    out[text.substr(0, eq)] = text.substr(eq + 1);
                }
            }
            ::pclose(pipe);
        }
        return out;
    }();
    return env;
}

std::string setting(const std::string& key) {
    const auto& env = k8s_env();
    auto it = env.find(key);
    INFO("the Kubernetes testbed is not up: run scripts/testbed/k8s up (needs root)");
    REQUIRE(it != env.end());
    return it->second;
}

// The current context of the kubeconfig(s) in `kubeconfig_list`, which must be usable.
KubeContext current_context(const std::string& kubeconfig_list) {
    auto config = load_kubeconfig(env_of({{"KUBECONFIG", kubeconfig_list}}));
    INFO((config ? std::string() : config.error().message));
    REQUIRE(config);
    const KubeContext* ctx = config->find(config->current_context);
    REQUIRE(ctx != nullptr);
    INFO(ctx->error);
    REQUIRE(ctx->error.empty());
    return *ctx;
}

// GET the test namespace's pods as the context's user (running its exec plugin first, if any).
Result<net::HttpResponse> list_pods(KubeContext ctx) {
    if (ctx.exec) {
        auto credential = run_exec_plugin(*ctx.exec, ctx);
        if (!credential) {
            return tl::unexpected(credential.error());
        }
        ctx.token = credential->token;
        ctx.tls.client_cert_pem = credential->client_cert_pem;
        ctx.tls.client_key_pem = credential->client_key_pem;
    }
    net::RetryPolicy retry;
    retry.max_attempts = 1;
    net::CurlHttpClient http(ctx.tls, retry);
    net::HttpRequest request;
    request.url = ctx.server + "/api/v1/namespaces/" + ctx.namespace_name + "/pods?limit=1";
    request.timeout = std::chrono::seconds(20);
    if (!ctx.token.empty()) {
        request.headers.emplace_back("Authorization", "Bearer " + ctx.token);
    }
    return http.request(request);
}

void require_listed(const KubeContext& ctx) {
    auto response = list_pods(ctx);
    INFO((response ? std::string() : response.error().message));
    REQUIRE(response);
    CHECK(response->status == 200);
    CHECK_THAT(response->body, Catch::Contains("\"kind\":\"PodList\""));
}

std::string data_of(const std::string& path) {
    return k8s::detail::base64_encode(read_text(path));
}

} // namespace

TEST_CASE("testbed kubeconfigs: token, client certificate files, exec plugin", "[k8s-config-it]") {
    SECTION("admin: bearer token, CA file, the context's namespace") {
        auto ctx = current_context(setting("K8S_KUBECONFIG"));
        CHECK(ctx.server == setting("K8S_SERVER"));
        CHECK(ctx.namespace_name == setting("K8S_NAMESPACE"));
        CHECK(ctx.tls.ca_file == setting("K8S_CA"));
        require_listed(ctx);
    }
    SECTION("client certificate and key files") {
        auto ctx = current_context(setting("K8S_KUBECONFIG_CERT"));
        CHECK(ctx.tls.client_cert_file == setting("K8S_CLIENT_CERT"));
        CHECK(ctx.token.empty());
        require_listed(ctx);
    }
    SECTION("exec credential plugin") {
        auto ctx = current_context(setting("K8S_KUBECONFIG_EXEC"));
        REQUIRE(ctx.exec);
        CHECK(ctx.exec->command == setting("K8S_EXEC_PLUGIN"));
        require_listed(ctx);
    }
    SECTION("a token the server does not know: unauthorized, and the token is not in the message") {
        auto response = list_pods(current_context(setting("K8S_KUBECONFIG_BADTOKEN")));
        REQUIRE_FALSE(response);
        CHECK(response.error().kind == ErrorKind::unauthorized);
        CHECK_THAT(response.error().message, !Catch::Contains(setting("K8S_BAD_TOKEN")));
    }
}

TEST_CASE("testbed: KUBECONFIG merge picks the first file's current context, others stay usable",
          "[k8s-config-it]") {
    auto config = load_kubeconfig(
        env_of({{"KUBECONFIG", setting("K8S_KUBECONFIG_CERT") + ":" + setting("K8S_KUBECONFIG")}}));
    REQUIRE(config);
    CHECK(config->current_context == setting("K8S_CERT_USER") + "@tandem-testbed");
    REQUIRE(config->contexts.size() == 2);
    for (const auto& ctx : config->contexts) {
        INFO(ctx.name);
        require_listed(ctx);
    }
}

TEST_CASE("testbed: CA, client certificate and key as *-data, decoded in memory", "[k8s-config-it]") {
    TempDir tmp;
    const std::string path =
        tmp.write("config",
                  "clusters:\n- name: tb\n  cluster:\n    server: " + setting("K8S_SERVER") +
                      "\n    certificate-authority-data: " + data_of(setting("K8S_CA")) +
                      "\nusers:\n- name: u\n  user:\n    client-certificate-data: " +
                      data_of(setting("K8S_CLIENT_CERT")) +
                      "\n    client-key-data: " + data_of(setting("K8S_CLIENT_KEY")) +
                      "\ncontexts:\n- name: data\n  context: {cluster: tb, user: u, "
                      "namespace: " +
                      setting("K8S_NAMESPACE") + "}\ncurrent-context: data\n",
                  0600);
    auto ctx = current_context(path);
    CHECK(ctx.tls.ca_file.empty());
    CHECK(ctx.tls.client_cert_file.empty());
    CHECK_FALSE(ctx.tls.client_key_pem.empty());
    require_listed(ctx);
}

TEST_CASE("testbed: insecure-skip-tls-verify only when the kubeconfig says so", "[k8s-config-it]") {
    TempDir tmp;
    tmp.write("token", setting("K8S_TOKEN") + "\n", 0600);
    auto kubeconfig = [&](const std::string& cluster_extra) {
        return tmp.write(
            "config",
            "clusters:\n- name: tb\n  cluster:\n    server: " + setting("K8S_SERVER") + "\n" + cluster_extra +
                "users:\n- name: u\n  user: {tokenFile: token}\ncontexts:\n- name: x\n  context: "
                "{cluster: tb, user: u, namespace: " +
                setting("K8S_NAMESPACE") + "}\ncurrent-context: x\n",
            0600);
    };
    SECTION("said: the server's certificate is not checked") {
        auto ctx = current_context(kubeconfig("    insecure-skip-tls-verify: true\n"));
        CHECK(ctx.tls.insecure_skip_verify);
        require_listed(ctx);
    }
    SECTION("not said, no CA: the testbed's certificate is refused") {
        auto ctx = current_context(kubeconfig(""));
        CHECK_FALSE(ctx.tls.insecure_skip_verify);
        auto response = list_pods(ctx);
        REQUIRE_FALSE(response);
        CHECK_THAT(response.error().message, Catch::Contains("SSL certificate problem"));
        CHECK_THAT(response.error().message, !Catch::Contains(setting("K8S_TOKEN")));
    }
}

TEST_CASE("testbed: in-cluster config from a service-account folder", "[k8s-config-it]") {
    TempDir tmp;
    tmp.write("token", setting("K8S_TOKEN") + "\n", 0600);
    tmp.write("ca.crt", read_text(setting("K8S_CA")));
    tmp.write("namespace", setting("K8S_NAMESPACE"));
    const std::string server = setting("K8S_SERVER"); // https://127.0.0.1:6443
    const auto colon = server.rfind(':');
    auto ctx = in_cluster_context(env_of({{"KUBERNETES_SERVICE_HOST", server.substr(8, colon - 8)},
                                          {"KUBERNETES_SERVICE_PORT", server.substr(colon + 1)}}),
                                  tmp.path());
    REQUIRE(ctx);
    REQUIRE(ctx->has_value());
    CHECK((*ctx)->server == server);
    require_listed(**ctx);
}
