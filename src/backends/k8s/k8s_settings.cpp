#include "backends/k8s/k8s_settings.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "backends/config_errors.hpp"
#include "core/quantity.hpp"

namespace tandem::k8s {

namespace {

Error bad(const ClusterConfig& c, const std::string& field, const std::string& message) {
    return backends::config_error(c, field, message);
}

} // namespace

Result<K8sSettings> parse_k8s_settings(const ClusterConfig& c, const GetEnv& getenv) {
    K8sSettings s;
    for (const auto& [key, value] : c.settings.items()) {
        if (!value.is_string()) {
            return tl::unexpected(bad(c, key, "must be a single value"));
        }
        const auto text = value.get<std::string>();
        if (key == "context") {
            s.context = text;
        } else if (key == "kubeconfig") {
            s.kubeconfig = text;
            if (s.kubeconfig.rfind("~/", 0) == 0) {
                s.kubeconfig = getenv("HOME").value_or("") + s.kubeconfig.substr(1);
            }
        } else if (key == "namespace") {
            s.namespace_name = text;
        } else if (key == "user") {
            if (text.empty()) {
                return tl::unexpected(bad(c, key, "must not be empty"));
            }
            s.user = text;
        } else if (key == "image") {
            s.image = text;
        } else if (key == "ttl_seconds_after_finished") {
            if (text == "0") {
                s.ttl_seconds_after_finished.reset();
            } else if (auto n = parse_positive_int(text)) {
                s.ttl_seconds_after_finished = *n;
            } else {
                return tl::unexpected(bad(c, key, n.error()));
            }
        } else if (key == "timeout_seconds") {
            auto n = parse_positive_int(text);
            if (!n) {
                return tl::unexpected(bad(c, key, n.error()));
            }
            s.timeout = std::chrono::seconds(*n);
        } else if (key == "workdir_limit_mb") {
            auto n = parse_positive_int(text);
            if (!n) {
                return tl::unexpected(bad(c, key, n.error()));
            }
            s.workdir_limit_bytes = static_cast<std::uint64_t>(*n) * 1024 * 1024;
        } else if (key == "upload_cache_claim") {
            s.upload_cache_claim = text;
        } else if (key == "serve_service_type") {
            if (text != "ClusterIP" && text != "NodePort" && text != "LoadBalancer") {
                return tl::unexpected(bad(c, key, "must be ClusterIP, NodePort or LoadBalancer"));
            }
            s.serve_service_type = text;
        } else if (key == "serve_qps_metric") {
            const bool ok = !text.empty() && text.size() <= 253 &&
                            std::all_of(text.begin(), text.end(), [](unsigned char ch) {
                                return std::isalnum(ch) || ch == '_' || ch == '-' || ch == '.' || ch == ':';
                            });
            if (!ok) {
                return tl::unexpected(
                    bad(c, key, "must be a metric name (letters, digits, '_', '-', '.', ':')"));
            }
            s.serve_qps_metric = text;
        } else if (key == "upload_wait_seconds") {
            auto n = parse_positive_int(text);
            if (!n) {
                return tl::unexpected(bad(c, key, n.error()));
            }
            s.upload_wait_seconds = *n;
        } else {
            return tl::unexpected(
                bad(c, key,
                    "unknown setting for a kubernetes cluster (known: context, kubeconfig, "
                    "namespace, user, image, ttl_seconds_after_finished, timeout_seconds, "
                    "workdir_limit_mb, upload_wait_seconds, upload_cache_claim, serve_service_type, "
                    "serve_qps_metric)"));
        }
    }
    return s;
}

} // namespace tandem::k8s
