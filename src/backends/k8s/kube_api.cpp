#include "backends/k8s/kube_api.hpp"

#include <fmt/format.h>

#include "backends/k8s/exec_credential.hpp"
#include "backends/k8s/job_state_proto.hpp"
#include "backends/k8s/job_state_skim.hpp"

namespace tandem::k8s {

namespace {

std::string one_line(std::string s) {
    for (char& c : s) {
        if (c == '\n' || c == '\r') {
            c = ' ';
        }
    }
    return s;
}

} // namespace

std::string query_escape(std::string_view value) {
    std::string out;
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
            out += static_cast<char>(c);
        } else {
            out += fmt::format("%{:02X}", c);
        }
    }
    return out;
}

KubeApi::KubeApi(std::string cluster, KubeContext context, HttpFactory factory,
                 std::chrono::milliseconds timeout)
    : m_cluster(std::move(cluster)), m_context(std::move(context)), m_factory(std::move(factory)),
      m_timeout(timeout) {}

Status KubeApi::ensure_client() {
    if (m_http) {
        return {};
    }
    if (!m_context.error.empty()) {
        return fail(ErrorKind::config, fmt::format("{}: {}", m_cluster, m_context.error), m_context.hint);
    }
    net::TlsSettings tls = m_context.tls;
    m_token = m_context.token;
    if (m_context.exec) {
        auto cred = run_exec_plugin(*m_context.exec, m_context);
        if (!cred) {
            return tl::unexpected(cred.error());
        }
        if (!cred->token.empty()) {
            m_token = cred->token;
        }
        if (!cred->client_cert_pem.empty()) {
            tls.client_cert_pem = cred->client_cert_pem;
            tls.client_key_pem = cred->client_key_pem;
            tls.client_cert_file.clear();
            tls.client_key_file.clear();
        }
    }
    m_http = m_factory(tls);
    return {};
}

net::Headers KubeApi::auth_headers(std::string accept) const {
    net::Headers h{{"Accept", std::move(accept)}};
    if (!m_token.empty()) {
        h.emplace_back("Authorization", "Bearer " + m_token);
    }
    return h;
}

Error KubeApi::error_for(int status, const nlohmann::json& body, const std::string& method,
                         const std::string& path) const {
    std::string message;
    std::string reason;
    if (body.is_object() && body.value("kind", "") == "Status") {
        message = one_line(body.value("message", ""));
        reason = body.value("reason", "");
    }
    const std::string where = fmt::format("{}: the API server at {}", m_cluster, m_context.server);
    const std::string user = m_context.user_name.empty() ? "anonymous" : "user '" + m_context.user_name + "'";
    switch (status) {
    case 401:
        return Error{
            ErrorKind::unauthorized,
            // The context is named here, not only in the hint: callers that fold this error into
            // another (the planner's "cannot run anywhere") keep the message alone.
            fmt::format("{} refused the credentials of {} of context '{}' (401 Unauthorized)", where, user,
                        m_context.name),
            fmt::format("the token or certificate of context '{}' is wrong or expired; renew it in {}",
                        m_context.name, m_context.source.empty() ? "the kubeconfig" : m_context.source)};
    case 403:
        return Error{ErrorKind::unauthorized,
                     fmt::format("{} forbids {} {} for {}: {}", where, method, path, user,
                                 message.empty() ? "403 Forbidden" : message),
                     "ask the cluster's admin for RBAC rights in this namespace, or pick another namespace"};
    case 404:
        return Error{ErrorKind::not_found,
                     fmt::format("{} has no {}{}", where, path, message.empty() ? "" : ": " + message),
                     {}};
    case 400:
    case 422:
        return Error{ErrorKind::invalid_spec,
                     fmt::format("{} refused {} {}: {}", where, method, path,
                                 message.empty() ? fmt::format("HTTP {}", status) : message),
                     {}};
    default:
        return Error{ErrorKind::remote,
                     fmt::format("{} answered HTTP {}{}{} to {} {}", where, status,
                                 reason.empty() ? "" : " " + reason, message.empty() ? "" : ": " + message,
                                 method, path),
                     {}};
    }
}

Result<ApiAnswer> KubeApi::call(const std::string& method, const std::string& path,
                                const nlohmann::json& body, std::vector<int> pass, bool idempotent,
                                const std::string& content_type) {
    return exchange(method, path, body, pass, idempotent, content_type, Slim::none);
}

Result<ApiAnswer> KubeApi::list_for_status(const std::string& path) {
    return exchange("GET", path, {}, {}, true, "application/json", Slim::status);
}

Result<ApiAnswer> KubeApi::list_deployments_for_status(const std::string& path) {
    return exchange("GET", path, {}, {}, true, "application/json", Slim::deployments);
}

Result<ApiAnswer> KubeApi::exchange(const std::string& method, const std::string& path,
                                    const nlohmann::json& body, const std::vector<int>& pass, bool idempotent,
                                    const std::string& content_type, Slim slim) {
    if (auto ok = ensure_client(); !ok) {
        return tl::unexpected(ok.error());
    }
    net::HttpRequest request;
    request.method = method;
    request.url = m_context.server + path;
    // A status List in protobuf first, as client-go asks: the server encodes it faster and it reads
    // without a scan. Anything that only speaks JSON (a proxy, an aggregated API) answers in JSON.
    request.headers =
        slim == Slim::status ? auth_headers(fmt::format("{}, application/json", k_protobuf_media_type)) : auth_headers();
    if (!body.is_null()) {
        request.body = body.dump();
        request.content_type = content_type;
    }
    request.timeout = m_timeout;
    request.idempotent = idempotent;
    request.pass_statuses = {400, 401, 403, 404, 409, 410, 422};
    auto response = m_http->request(request);
    if (!response) {
        Error e = response.error();
        e.message = fmt::format("{}: {}", m_cluster, e.message);
        return tl::unexpected(std::move(e));
    }
    ApiAnswer answer;
    answer.status = response->status;
    const bool protobuf = response->header("content-type").value_or("").rfind(k_protobuf_media_type, 0) == 0;
    if (protobuf && response->status / 100 != 2) {
        // An error Status in protobuf; when it is unreadable the error says only the HTTP status.
        if (auto status = decode_status_object(response->body)) {
            answer.body = std::move(*status);
        }
    } else if (slim != Slim::none && response->status / 100 == 2) {
        auto list = protobuf                   ? decode_status_list(response->body)
                    : slim == Slim::status     ? skim_status_list(response->body)
                                               : skim_deployment_list(response->body);
        if (!list) {
            return fail(ErrorKind::remote,
                        fmt::format("{}: the API server answered {} {} with a List tandem cannot read: {}",
                                    m_cluster, method, path, list.error().message));
        }
        answer.body = std::move(*list);
    } else if (!response->body.empty()) {
        answer.body = nlohmann::json::parse(response->body, nullptr, false);
        if (answer.body.is_discarded()) {
            std::string excerpt = one_line(response->body.substr(0, 120));
            return fail(ErrorKind::remote,
                        fmt::format("{}: the API server answered HTTP {} with non-JSON to {} {}: {}",
                                    m_cluster, response->status, method, path, excerpt));
        }
    }
    const bool ok = answer.status / 100 == 2;
    if (!ok && std::find(pass.begin(), pass.end(), answer.status) == pass.end()) {
        return tl::unexpected(error_for(answer.status, answer.body, method, path));
    }
    return answer;
}

Result<std::unique_ptr<net::WebSocket>> KubeApi::websocket(const std::string& path,
                                                           const std::vector<std::string>& protocols) {
    if (auto ok = ensure_client(); !ok) {
        return tl::unexpected(ok.error());
    }
    net::HttpRequest request;
    request.url = m_context.server + path;
    request.headers = auth_headers("*/*");
    request.timeout = m_timeout;
    net::HttpResponse refused;
    auto ws = m_http->open_websocket(request, protocols, &refused);
    if (!ws) {
        if (refused.status != 0) {
            return tl::unexpected(
                error_for(refused.status, nlohmann::json::parse(refused.body, nullptr, false), "GET", path));
        }
        Error e = ws.error();
        e.message = fmt::format("{}: {}", m_cluster, e.message);
        return tl::unexpected(std::move(e));
    }
    return ws;
}

Status KubeApi::stream(const std::string& path, const std::function<bool(std::string_view)>& on_chunk,
                       std::vector<int> pass, int* status) {
    if (auto ok = ensure_client(); !ok) {
        return tl::unexpected(ok.error());
    }
    net::HttpRequest request;
    request.url = m_context.server + path;
    request.headers = auth_headers();
    request.timeout = std::chrono::milliseconds(0);
    request.idempotent = true;
    request.pass_statuses = {400, 401, 403, 404, 410};
    net::HttpResponse head;
    std::string error_body;
    bool failed_status = false;
    auto streamed = m_http->stream(
        request,
        [&](std::string_view piece) {
            if (head.status / 100 != 2) { // a Status object follows: collect it, don't hand it on
                failed_status = true;
                error_body.append(piece);
                return error_body.size() < 65536;
            }
            return on_chunk(piece);
        },
        &head);
    if (!streamed) {
        Error e = streamed.error();
        e.message = fmt::format("{}: {}", m_cluster, e.message);
        return tl::unexpected(std::move(e));
    }
    if (status) {
        *status = head.status;
    }
    if (head.status / 100 != 2 || failed_status) {
        if (std::find(pass.begin(), pass.end(), head.status) != pass.end()) {
            return {};
        }
        return tl::unexpected(
            error_for(head.status, nlohmann::json::parse(error_body, nullptr, false), "GET", path));
    }
    return {};
}

} // namespace tandem::k8s
