// In-cluster config from the service-account folder (a temporary folder stands in for
// /var/run/secrets/kubernetes.io/serviceaccount).

#include <catch2/catch.hpp>

#include "backends/k8s/in_cluster.hpp"
#include "kubeconfig_test_support.hpp"

using namespace tandem;
using namespace tandem::k8s;
using namespace tandem::k8s::test;

TEST_CASE("in-cluster: not in a cluster without both service variables", "[in-cluster]") {
    TempDir tmp;
    for (const auto& env : {env_of({}), env_of({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}}),
                            env_of({{"KUBERNETES_SERVICE_HOST", ""}, {"KUBERNETES_SERVICE_PORT", "443"}})}) {
        auto ctx = in_cluster_context(env, tmp.path());
        REQUIRE(ctx);
        CHECK_FALSE(ctx->has_value());
    }
}

TEST_CASE("in-cluster: server, token, CA and namespace from the service account", "[in-cluster]") {
    TempDir tmp;
    tmp.write("token", "fixture-sa-token\n");
    tmp.write("ca.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    auto env = env_of({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});

    SECTION("with a namespace file") {
        tmp.write("namespace", "team-x\n");
        auto ctx = in_cluster_context(env, tmp.path());
        REQUIRE(ctx);
        REQUIRE(ctx->has_value());
        const KubeContext& c = **ctx;
        CHECK(c.name == "in-cluster");
        CHECK(c.server == "https://10.96.0.1:443");
        CHECK(c.token == "fixture-sa-token");
        CHECK(c.token_file == tmp.path() + "/token");
        CHECK(c.tls.ca_file == tmp.path() + "/ca.crt");
        CHECK_FALSE(c.tls.insecure_skip_verify);
        CHECK(c.namespace_name == "team-x");
        CHECK(c.error.empty());
    }
    SECTION("without one: default") {
        auto ctx = in_cluster_context(env, tmp.path());
        REQUIRE(ctx);
        REQUIRE(ctx->has_value());
        CHECK((*ctx)->namespace_name == "default");
    }
    SECTION("an IPv6 service address is bracketed") {
        auto ctx = in_cluster_context(
            env_of({{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}),
            tmp.path());
        REQUIRE(ctx);
        REQUIRE(ctx->has_value());
        CHECK((*ctx)->server == "https://[fd00:10:96::1]:6443");
    }
}

TEST_CASE("in-cluster: a missing token or CA is an error, not a silent anonymous config", "[in-cluster]") {
    TempDir tmp;
    auto env = env_of({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
    auto no_token = in_cluster_context(env, tmp.path());
    REQUIRE_FALSE(no_token);
    CHECK(no_token.error().kind == ErrorKind::config);
    CHECK(no_token.error().message ==
          "in-cluster config: cannot read " + tmp.path() + "/token: No such file or directory");
    CHECK_THAT(no_token.error().hint, Catch::Contains("automountServiceAccountToken"));

    tmp.write("token", "fixture-sa-token\n");
    auto no_ca = in_cluster_context(env, tmp.path());
    REQUIRE_FALSE(no_ca);
    CHECK(no_ca.error().message ==
          "in-cluster config: cannot read " + tmp.path() + "/ca.crt: No such file or directory");
    CHECK_THAT(no_ca.error().message, !Catch::Contains("fixture-sa-token"));
}
