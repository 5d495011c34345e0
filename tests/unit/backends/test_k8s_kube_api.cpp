// KubeApi's errors from the API server's answers, over a scripted HttpClient (the real server:
// tests/integration/test_k8s_*.cpp).

#include <catch2/catch.hpp>

#include "backends/k8s/kube_api.hpp"

using namespace tandem;
using namespace tandem::k8s;

namespace {

class ScriptedHttp final : public net::HttpClient {
public:
    explicit ScriptedHttp(net::HttpResponse answer) : m_answer(std::move(answer)) {}
    Result<net::HttpResponse> request(const net::HttpRequest& request) override {
        last = request;
        return m_answer;
    }
    Status stream(const net::HttpRequest&, const std::function<bool(std::string_view)>&,
                  net::HttpResponse*) override {
        return {};
    }
    static inline net::HttpRequest last;

private:
    net::HttpResponse m_answer;
};

KubeApi api_answering(int status, std::string body) {
    KubeContext ctx;
    ctx.name = "wrong-token@lab";
    ctx.user_name = "wrong-token";
    ctx.server = "https://127.0.0.1:6443";
    ctx.token = "tok-SECRET-123";
    ctx.source = "/home/u/.kube/config";
    net::HttpResponse answer;
    answer.status = status;
    answer.body = std::move(body);
    return KubeApi("lab", ctx,
                   [answer](const net::TlsSettings&) { return std::make_unique<ScriptedHttp>(answer); });
}

} // namespace

TEST_CASE("a 401 names the cluster, the user and the context in the message itself, never the token") {
    auto api = api_answering(401, R"({"kind":"Status","status":"Failure","message":"Unauthorized",)"
                                  R"("reason":"Unauthorized","code":401})");
    auto r = api.call("GET", "/api/v1/namespaces/x/pods");
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::unauthorized);
    CHECK(r.error().message.rfind("lab: ", 0) == 0);
    CHECK(r.error().message.find("user 'wrong-token'") != std::string::npos);
    CHECK(r.error().message.find("context 'wrong-token@lab'") != std::string::npos);
    CHECK(r.error().message.find("tok-SECRET-123") == std::string::npos);
    CHECK(r.error().hint.find("/home/u/.kube/config") != std::string::npos);
    // The token did travel, as a header.
    bool sent = false;
    for (const auto& [k, v] : ScriptedHttp::last.headers) {
        sent = sent || (k == "Authorization" && v == "Bearer tok-SECRET-123");
    }
    CHECK(sent);
}

TEST_CASE("a 409 passed by the caller comes back as an answer, unpassed it is a remote error") {
    const std::string body = R"({"kind":"Status","message":"jobs.batch \"x\" already exists",)"
                             R"("reason":"AlreadyExists","code":409})";
    auto passed =
        api_answering(409, body).call("POST", "/apis/batch/v1/namespaces/n/jobs", {{"a", 1}}, {409});
    REQUIRE(passed);
    CHECK(passed->status == 409);
    CHECK(passed->body["reason"] == "AlreadyExists");
    auto refused = api_answering(409, body).call("POST", "/apis/batch/v1/namespaces/n/jobs", {{"a", 1}});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::remote);
    CHECK(refused.error().message.find("AlreadyExists") != std::string::npos);
}
