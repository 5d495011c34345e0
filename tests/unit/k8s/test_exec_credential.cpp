// Exec credential plugins, run for real: small bash plugins written into a temporary folder.

#include <chrono>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "backends/k8s/exec_credential.hpp"
#include "kubeconfig_test_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using namespace tandem::k8s::test;

namespace {

constexpr const char* k_v1beta1 = "client.authentication.k8s.io/v1beta1";
constexpr const char* k_v1 = "client.authentication.k8s.io/v1";

// Sends this process's stderr (fd 2) to a file while alive; text() reads what arrived.
class StderrCapture {
public:
    explicit StderrCapture(const TempDir& dir) : m_path(dir.path() + "/stderr.txt") {
        std::fflush(stderr);
        m_saved = ::dup(2);
        const int fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(fd, 2);
        ::close(fd);
    }
    ~StderrCapture() { restore(); }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    std::string text() {
        restore();
        return read_text(m_path);
    }

private:
    void restore() {
        if (m_saved >= 0) {
            std::fflush(stderr);
            ::dup2(m_saved, 2);
            ::close(m_saved);
            m_saved = -1;
        }
    }
    std::string m_path;
    int m_saved = -1;
};

ExecPlugin plugin_at(const std::string& command, const char* version = k_v1beta1) {
    ExecPlugin p;
    p.api_version = version;
    p.command = command;
    p.interactive_mode = "IfAvailable";
    return p;
}

KubeContext context_named(const std::string& name) {
    KubeContext ctx;
    ctx.name = name;
    ctx.server = "https://10.0.0.1:6443";
    ctx.namespace_name = "default";
    return ctx;
}

std::string script(const std::string& body) {
    return "#!/bin/bash\n" + body + "\n";
}

} // namespace

TEST_CASE("exec plugin: a v1beta1 token with an expiry", "[exec]") {
    TempDir tmp;
    const auto plugin = tmp.write("plugin",
                                  script(R"(cat <<'EOF'
{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
 "status": {"token": "fixture-exec-token", "expirationTimestamp": "2030-01-01T00:00:00Z"}})"
                                         "\nEOF"),
                                  0755);
    auto result = run_exec_plugin(plugin_at(plugin), context_named("dev"));
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result);
    CHECK(result->token == "fixture-exec-token");
    CHECK(result->client_cert_pem.empty());
    REQUIRE(result->expires_at);
    CHECK(*result->expires_at == 1893456000);
}

TEST_CASE("exec plugin: a v1 client certificate and key", "[exec]") {
    TempDir tmp;
    const auto plugin =
        tmp.write("plugin",
                  script(R"(printf '%s' '{"apiVersion":"client.authentication.k8s.io/v1",)"
                         R"("kind":"ExecCredential","status":{"clientCertificateData":)"
                         R"("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",)"
                         R"("clientKeyData":"-----BEGIN PRIVATE KEY-----\nBBBB\n-----END )"
                         R"(PRIVATE KEY-----\n"}}')"),
                  0755);
    auto p = plugin_at(plugin, k_v1);
    p.interactive_mode = "Never";
    auto result = run_exec_plugin(p, context_named("dev"));
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result);
    CHECK(result->token.empty());
    CHECK(result->client_cert_pem == "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    CHECK(result->client_key_pem == "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n");
    CHECK_FALSE(result->expires_at);
}

TEST_CASE("exec plugin: KUBERNETES_EXEC_INFO, args, env and stdin as the protocol says", "[exec]") {
    TempDir tmp;
    const std::string out = tmp.path() + "/seen";
    const auto plugin = tmp.write("plugin",
                                  script("printf '%s' \"$KUBERNETES_EXEC_INFO\" > " + out + ".info\n" +
                                         "printf '%s\\n' \"$@\" > " + out + ".args\n" +
                                         "printf '%s' \"$PLUGIN_MODE/$HOME\" > " + out + ".env\n" +
                                         "readlink /proc/self/fd/0 > " + out + ".stdin\n" +
                                         R"(echo '{"apiVersion":"client.authentication.k8s.io/v1",)"
                                         R"("kind":"ExecCredential","status":{"token":"t0k3n"}}')"),
                                  0755);
    auto p = plugin_at(plugin, k_v1);
    p.interactive_mode = "IfAvailable"; // treated as Never: interactive false, stdin /dev/null
    p.args = {"get-token", "--cluster name", ""};
    p.env = {{"PLUGIN_MODE", "fixture"}};

    SECTION("without cluster info") {
        auto result = run_exec_plugin(p, context_named("dev"));
        INFO((result ? std::string() : result.error().message));
        REQUIRE(result);
        CHECK(result->token == "t0k3n");
        auto info = nlohmann::json::parse(read_text(out + ".info"));
        CHECK(info == nlohmann::json::parse(R"({"apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential", "spec": {"interactive": false}})"));
        CHECK(read_text(out + ".args") == "get-token\n--cluster name\n\n"); // no shell splitting
        const char* home = ::getenv("HOME");
        CHECK(read_text(out + ".env") == std::string("fixture/") + (home ? home : "")); // ours + the plugin's
        CHECK(read_text(out + ".stdin") == "/dev/null\n");
    }
    SECTION("with cluster info: server and CA as base64") {
        p.provide_cluster_info = true;
        auto ctx = context_named("dev");
        ctx.tls.ca_pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        ctx.tls.insecure_skip_verify = false;
        REQUIRE(run_exec_plugin(p, ctx));
        auto info = nlohmann::json::parse(read_text(out + ".info"));
        CHECK(info["spec"]["interactive"] == false);
        CHECK(info["spec"]["cluster"]["server"] == "https://10.0.0.1:6443");
        CHECK(info["spec"]["cluster"]["certificate-authority-data"] ==
              "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFBQUEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=");
        CHECK_FALSE(info["spec"]["cluster"].contains("insecure-skip-tls-verify"));
    }
}

TEST_CASE("exec plugin: a failing plugin's stderr reaches ours, and the error names it", "[exec]") {
    TempDir tmp;
    const auto plugin = tmp.write("plugin", script("echo 'please run: fixture login' >&2\nexit 3"), 0755);
    StderrCapture capture(tmp);
    auto result = run_exec_plugin(plugin_at(plugin), context_named("dev"));
    const std::string err = capture.text();
    REQUIRE_FALSE(result);
    CHECK(result.error().kind == ErrorKind::unauthorized);
    CHECK(result.error().message == "k8s/dev: exec plugin '" + plugin + "' exited with code 3");
    CHECK(err == "please run: fixture login\n");
}

TEST_CASE("exec plugin: output that is not an ExecCredential, without echoing it", "[exec]") {
    TempDir tmp;
    auto run = [&](const std::string& body) {
        const auto plugin = tmp.write("plugin", script(body), 0755);
        auto result = run_exec_plugin(plugin_at(plugin), context_named("dev"));
        REQUIRE_FALSE(result);
        CHECK(result.error().kind == ErrorKind::unauthorized);
        CHECK_THAT(result.error().message, Catch::StartsWith("k8s/dev: exec plugin '" + plugin + "' "));
        CHECK_THAT(result.error().message, !Catch::Contains("fixture-secret"));
        return result.error().message.substr(result.error().message.rfind("' ") + 2);
    };
    CHECK(run("echo garbage fixture-secret") == "printed output that is not JSON (error at byte 1)");
    CHECK(run("true") == "printed nothing on stdout");
    CHECK(
        run(R"(echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"fixture-secret')") ==
        "printed output that is not JSON (error at byte 87)");
    CHECK(run(R"(echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
              R"("status":{"token":"fixture-secret"}}')") ==
          "returned apiVersion 'client.authentication.k8s.io/v1', but the kubeconfig asked for "
          "'client.authentication.k8s.io/v1beta1'");
    CHECK(run(R"(echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential"}')") ==
          "returned an ExecCredential without a status");
    CHECK(run(R"(echo '[1, 2]')") == "printed JSON that is not an ExecCredential object");
}

TEST_CASE("exec plugin: not on PATH, with the kubeconfig's installHint", "[exec]") {
    auto p = plugin_at("tandem-fixture-no-such-plugin");
    p.install_hint = "install it with: apt-get install tandem-fixture-plugin\n";
    auto result = run_exec_plugin(p, context_named("gke"));
    REQUIRE_FALSE(result);
    CHECK(result.error().kind == ErrorKind::config);
    CHECK(result.error().message ==
          "k8s/gke: exec plugin 'tandem-fixture-no-such-plugin' was not found on PATH");
    CHECK(result.error().hint == "install it with: apt-get install tandem-fixture-plugin");

    SECTION("a path that does not exist") {
        auto q = plugin_at("/nonexistent/plugin");
        auto missing = run_exec_plugin(q, context_named("gke"));
        REQUIRE_FALSE(missing);
        CHECK(missing.error().message ==
              "k8s/gke: exec plugin '/nonexistent/plugin' cannot be run: no such file");
        CHECK(missing.error().hint == "fix users[].user.exec.command in the kubeconfig");
    }
}

TEST_CASE("exec plugin: found on PATH", "[exec]") {
    // `true` is on every PATH; it prints nothing, which proves it ran (and was not reported missing).
    auto result = run_exec_plugin(plugin_at("true"), context_named("dev"));
    REQUIRE_FALSE(result);
    CHECK(result.error().message == "k8s/dev: exec plugin 'true' printed nothing on stdout");
}

TEST_CASE("exec plugin: a time limit and an output cap", "[exec]") {
    TempDir tmp;
    SECTION("time limit") {
        const auto plugin = tmp.write("plugin", script("exec sleep 10"), 0755);
        const auto start = std::chrono::steady_clock::now();
        auto result =
            run_exec_plugin(plugin_at(plugin), context_named("dev"), {std::chrono::milliseconds(300)});
        const auto took = std::chrono::steady_clock::now() - start;
        REQUIRE_FALSE(result);
        CHECK(result.error().kind == ErrorKind::timeout);
        CHECK(result.error().message == "k8s/dev: exec plugin '" + plugin + "' did not finish within 0.3 s");
        CHECK(took < std::chrono::seconds(3));
    }
    SECTION("output cap") {
        const auto plugin = tmp.write("plugin", script("head -c 100000 /dev/zero"), 0755);
        ExecOptions options;
        options.max_output = 10000;
        auto result = run_exec_plugin(plugin_at(plugin), context_named("dev"), options);
        REQUIRE_FALSE(result);
        CHECK(result.error().message == "k8s/dev: exec plugin '" + plugin +
                                            "' printed more than 10000 bytes; an ExecCredential is small");
    }
}

TEST_CASE("exec plugin: interactiveMode Always is refused, tandem never prompts", "[exec]") {
    auto p = plugin_at("/bin/true", k_v1);
    p.interactive_mode = "Always";
    auto result = run_exec_plugin(p, context_named("dev"));
    REQUIRE_FALSE(result);
    CHECK(result.error().kind == ErrorKind::config);
    CHECK(result.error().message == "k8s/dev: exec plugin '/bin/true' needs a terminal (interactiveMode: "
                                    "Always), and tandem never prompts");
}

TEST_CASE("parse_exec_credential: status rules and timestamps", "[exec]") {
    auto parse = [](const std::string& status) {
        return parse_exec_credential(
            R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":)" + status +
                "}",
            k_v1, "k8s/x: exec plugin 'p'");
    };
    auto offset = parse(R"({"token":"t","expirationTimestamp":"2030-01-01T02:00:00.123+02:00"})");
    REQUIRE(offset);
    CHECK(offset->expires_at == 1893456000);
    auto message = [&](const std::string& status) {
        auto r = parse(status);
        REQUIRE_FALSE(r);
        return r.error().message;
    };
    CHECK(message(R"({})") == "k8s/x: exec plugin 'p' returned neither status.token nor "
                              "status.clientCertificateData and clientKeyData");
    CHECK(message(R"({"clientCertificateData":"c"})") ==
          "k8s/x: exec plugin 'p' returned status.clientCertificateData without status.clientKeyData");
    CHECK(message(R"({"token":"t","expirationTimestamp":"tomorrow"})") ==
          "k8s/x: exec plugin 'p' returned status.expirationTimestamp 'tomorrow', which is not an RFC 3339 "
          "time");
    CHECK(message(R"({"token":7})") ==
          "k8s/x: exec plugin 'p' returned an ExecCredential whose status.token is not a string");
}

TEST_CASE("exec plugin: a relative command from a kubeconfig runs from the kubeconfig's folder", "[exec]") {
    TempDir tmp;
    tmp.write("kube/bin/plugin",
              script(R"(echo '{"apiVersion":"client.authentication.k8s.io/v1beta1",)"
                     R"("kind":"ExecCredential","status":{"token":"fixture-relative"}}')"),
              0755);
    const std::string path = tmp.write("kube/config", R"(clusters: [{name: c, cluster: {server: "https://c"}}]
users:
- name: u
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./bin/plugin}
contexts: [{name: rel, context: {cluster: c, user: u}}]
)");
    auto config = load_kubeconfig(env_of({{"KUBECONFIG", path}}));
    REQUIRE(config);
    const KubeContext* ctx = config->find("rel");
    REQUIRE(ctx != nullptr);
    REQUIRE(ctx->error.empty());
    REQUIRE(ctx->exec);
    CHECK(ctx->exec->command == tmp.path() + "/kube/bin/plugin");
    auto result = run_exec_plugin(*ctx->exec, *ctx);
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result);
    CHECK(result->token == "fixture-relative");
}
