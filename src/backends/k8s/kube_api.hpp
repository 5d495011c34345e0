#pragma once
// The thin REST shell under the Kubernetes backend: one kubeconfig context, its credentials resolved once
// per invocation (a bearer token, a client certificate, or an exec plugin run on first use), and one
// HttpClient made after that, so every request of the invocation shares one TLS connection. Errors name
// the cluster ("k8s/<context>") and carry the API server's own Status message; credentials never appear.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/k8s/kubeconfig.hpp"
#include "core/error.hpp"
#include "net/http_client.hpp"

namespace tandem::k8s {

using HttpFactory = std::function<std::unique_ptr<net::HttpClient>(const net::TlsSettings&)>;

struct ApiAnswer {
    int status = 0;
    nlohmann::json body; // parsed JSON, or null when the body was empty
};

class KubeApi {
public:
    KubeApi(std::string cluster, KubeContext context, HttpFactory factory,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(15'000));

    const std::string& cluster() const { return m_cluster; }
    const KubeContext& context() const { return m_context; }

    // One request. 2xx and the statuses in `pass` come back as answers; anything else is an Error built
    // from the API server's Status (401/403 unauthorized, 404 not_found, 422 invalid_spec, ...).
    Result<ApiAnswer> call(const std::string& method, const std::string& path,
                           const nlohmann::json& body = {}, std::vector<int> pass = {},
                           bool idempotent = true, const std::string& content_type = "application/json");
    // A GET of a List for the state mapping, skimmed (job_state_skim.hpp): its items keep only what
    // job_state reads. Parsing a whole pod list would cost more than the request.
    Result<ApiAnswer> list_for_status(const std::string& path);
    // A GET of a List of Deployments, skimmed for `serve status` (skim_deployment_list, JSON only).
    Result<ApiAnswer> list_deployments_for_status(const std::string& path);
    // A streamed GET (pods/log?follow, ?watch): pieces as they arrive; `on_chunk` returning false stops.
    Status stream(const std::string& path, const std::function<bool(std::string_view)>& on_chunk,
                  std::vector<int> pass = {}, int* status = nullptr);

    // An upgraded connection (pods/exec): a GET of `path` offering `protocols`; a refusal is the error
    // its Status says (403 forbidden, 404 no such pod, 400 container not running, ...).
    Result<std::unique_ptr<net::WebSocket>> websocket(const std::string& path,
                                                      const std::vector<std::string>& protocols);

    // The error a non-2xx answer stands for (exposed so callers can turn a passed status into one).
    Error error_for(int status, const nlohmann::json& body, const std::string& method,
                    const std::string& path) const;

private:
    enum class Slim { none, status, deployments };
    Result<ApiAnswer> exchange(const std::string& method, const std::string& path, const nlohmann::json& body,
                               const std::vector<int>& pass, bool idempotent, const std::string& content_type,
                               Slim slim);
    Status ensure_client();
    net::Headers auth_headers(std::string accept = "application/json") const;

    std::string m_cluster;
    KubeContext m_context;
    HttpFactory m_factory;
    std::chrono::milliseconds m_timeout;
    std::unique_ptr<net::HttpClient> m_http;
    std::string m_token; // resolved bearer token (secret)
};

// Percent-encodes a query value (label selectors: '=' ',' '!' and spaces).
std::string query_escape(std::string_view value);

} // namespace tandem::k8s
