// KubeApi's errors from the API server's answers, over a scripted HttpClient (the real server:
// tests/integration/test_k8s_*.cpp).

#include <catch2/catch.hpp>

#include "../k8s/proto_writer.hpp"
#include "backends/k8s/job_state_proto.hpp"
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

KubeApi api_answering(int status, std::string body, std::string content_type = "application/json") {
    KubeContext ctx;
    ctx.name = "wrong-token@lab";
    ctx.user_name = "wrong-token";
    ctx.server = "https://127.0.0.1:6443";
    ctx.token = "tok-SECRET-123";
    ctx.source = "/home/u/.kube/config";
    net::HttpResponse answer;
    answer.status = status;
    answer.body = std::move(body);
    answer.headers.emplace_back("content-type", std::move(content_type));
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

TEST_CASE("a status List is asked for in protobuf first, and read in whichever encoding comes back") {
    using namespace tandem_test::pb;
    const std::string path = "/api/v1/namespaces/n/pods?labelSelector=x";
    Msg pod;
    pod.msg(1, Msg().str(1, "p-0").entry(11, "tandem.dev/job", "j")).msg(3, Msg().str(1, "Running"));
    const std::string proto = envelope("v1", "PodList", Msg().msg(2, pod));
    auto from_proto = api_answering(200, proto, std::string(k_protobuf_media_type)).list_for_status(path);
    REQUIRE(from_proto);
    CHECK(ScriptedHttp::last.headers.front() ==
          std::pair<std::string, std::string>{"Accept",
                                              "application/vnd.kubernetes.protobuf, application/json"});
    const std::string text = R"({"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"p-0",)"
                             R"("labels":{"tandem.dev/job":"j","app":"x"}},"status":{"phase":"Running"}}]})";
    auto from_json = api_answering(200, text, "application/json").list_for_status(path);
    REQUIRE(from_json);
    CHECK(from_proto->body == from_json->body);
    CHECK(from_proto->body["items"][0]["status"]["phase"] == "Running");
    // Other calls still ask for JSON only.
    REQUIRE(api_answering(200, "{}").call("GET", "/version"));
    CHECK(ScriptedHttp::last.headers.front().second == "application/json");
}

TEST_CASE("an error Status in protobuf gives the same error as in JSON, an unreadable one the HTTP status") {
    using namespace tandem_test::pb;
    Msg status;
    status.str(2, "Failure").str(3, "pods is forbidden: no").str(4, "Forbidden").num(6, 403);
    const std::string type(k_protobuf_media_type);
    auto r = api_answering(403, envelope("v1", "Status", status), type).list_for_status("/api/v1/pods");
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::unauthorized);
    CHECK_THAT(r.error().message, Catch::Matchers::Contains("pods is forbidden: no"));
    auto broken = api_answering(500, "k8s", type).list_for_status("/api/v1/pods");
    REQUIRE_FALSE(broken);
    CHECK_THAT(broken.error().message, Catch::Matchers::Contains("answered HTTP 500"));
    auto bad_list = api_answering(200, "k8s", type).list_for_status("/api/v1/pods");
    REQUIRE_FALSE(bad_list);
    CHECK_THAT(bad_list.error().message,
               Catch::Matchers::Contains("a List tandem cannot read: no protobuf envelope"));
}
