#include "core/service_parser.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/skypilot_keys.hpp"

namespace tandem::detail {

namespace {

// SkyPilot's sky/serve/load_balancing_policies.py LB_POLICIES.
const std::vector<std::string_view> k_lb_policies{"round_robin", "least_load", "instance_aware_least_load"};

// The bounds to_json keeps for YAML, applied to post_data written as a JSON string.
constexpr int k_max_json_depth = 64;
constexpr std::size_t k_max_json_values = 20000;

// Kubernetes keeps probe delays and replica counts in int32 fields.
constexpr std::int64_t k_max_seconds = std::numeric_limits<std::int32_t>::max();

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

std::optional<int> whole_number(std::string_view text) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

std::optional<double> number(std::string_view text) {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

// An HTTP field name (RFC 9110 token).
bool valid_header_name(std::string_view name) {
    static constexpr std::string_view k_extra = "!#$%&'*+-.^_`|~";
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) != 0 || k_extra.find(static_cast<char>(c)) != std::string_view::npos;
    });
}

// The deepest nesting of [ and { in JSON text, outside strings; a look before parsing, so that nothing
// deeper than to_json allows is ever built.
int json_depth(std::string_view text) {
    int depth = 0;
    int deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

class ServiceParser {
public:
    ServiceParser(YamlWalker& w, TaskSpec& spec, const LoadOptions& options)
        : m_w(w), m_spec(spec), m_options(options) {}

    void section(const YAML::Node& node) {
        if (!node.IsMap()) {
            // An empty value has no position of its own (yaml-cpp marks the next line): point at the key.
            std::string message = "must be a mapping (readiness_probe, replicas or replica_policy, ports, "
                                  "load_balancing_policy, tls)";
            node.IsNull() ? m_w.error_at(m_spec.location_of("service"), "service", std::move(message))
                          : m_w.error(node, "service", std::move(message));
            return;
        }
        ServiceSpec service;
        std::optional<YAML::Node> replicas_key;
        std::optional<YAML::Node> policy_key;
        for (const auto& [key, value] : m_w.entries(node, "service")) {
            if (!m_w.admit(key, "service", "service", m_spec.notes)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path("service", k);
            m_spec.locations[field] = m_w.loc(key);
            if (k == "readiness_probe") {
                readiness_probe(value, field, service.readiness_probe);
            } else if (k == "replicas") {
                replicas_key = key;
                if (auto n = count(value, field)) {
                    service.min_replicas = *n;
                }
            } else if (k == "replica_policy") {
                policy_key = key;
                service.has_replica_policy = true;
                replica_policy(value, field, service);
            } else if (k == "ports") {
                port(value, field, service);
            } else if (k == "load_balancing_policy") {
                load_balancing_policy(value, field, service);
            } else if (k == "tls") {
                tls(value, field, service);
            } else if (k == "pool") {
                pool(key, value, field);
            }
        }
        if (replicas_key && policy_key) {
            // SkyPilot: "Cannot specify both `replicas` and `replica_policy` ... Please use one of them."
            m_w.error(*policy_key, "service.replica_policy",
                      "cannot be combined with service.replicas; use one of them (replicas: a fixed count, "
                      "replica_policy: autoscaling)");
        }
        m_spec.service = std::move(service);
    }

private:
    // ---- readiness_probe: a path, or {path, initial_delay_seconds, timeout_seconds, post_data, headers}
    void readiness_probe(const YAML::Node& node, const std::string& path, ReadinessProbe& probe) {
        if (!node.IsMap()) {
            if (auto v = m_w.scalar(node, path); v && probe_path(node, path, *v)) {
                probe.path = *v;
            }
            return;
        }
        bool has_path = false;
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.admit(key, "service.readiness_probe", path, m_spec.notes)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            m_spec.locations[field] = m_w.loc(key);
            if (k == "path") {
                has_path = true;
                if (auto v = m_w.scalar(value, field); v && probe_path(value, field, *v)) {
                    probe.path = *v;
                }
            } else if (k == "initial_delay_seconds") {
                if (auto s = seconds(value, field, true)) {
                    probe.initial_delay_seconds = *s;
                }
            } else if (k == "timeout_seconds") {
                if (auto s = seconds(value, field, false)) {
                    probe.timeout_seconds = *s;
                }
            } else if (k == "post_data") {
                post_data(value, field, probe);
            } else if (k == "headers") {
                headers(value, field, probe);
            }
        }
        if (!has_path) {
            m_w.error(node, join_path(path, "path"), "is required (the URL path to probe, e.g. /health)");
        }
    }

    bool probe_path(const YAML::Node& node, const std::string& field, const std::string& text) {
        if (text.empty() || text[0] != '/') {
            m_w.error(node, field, fmt::format("must start with '/' (got '{}')", text));
            return false;
        }
        if (std::any_of(text.begin(), text.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
            m_w.error(node, field, "must be a URL path (no spaces or control characters)");
            return false;
        }
        return true;
    }

    // A mapping (sent as JSON), or a string that must be JSON (SkyPilot json.loads it).
    void post_data(const YAML::Node& node, const std::string& field, ReadinessProbe& probe) {
        if (node.IsMap()) {
            if (auto j = m_w.to_json(node, field)) {
                probe.post_data = std::move(*j);
            }
            return;
        }
        if (!node.IsScalar()) {
            m_w.error(
                node, field,
                fmt::format("must be a mapping or a string of JSON, not a {}", YamlWalker::kind_name(node)));
            return;
        }
        const std::string& text = node.Scalar();
        if (json_depth(text) > k_max_json_depth) {
            m_w.error(node, field, fmt::format("is nested deeper than {} levels", k_max_json_depth));
            return;
        }
        std::size_t values = 0;
        const nlohmann::json::parser_callback_t counter = [&values](int, nlohmann::json::parse_event_t,
                                                                    nlohmann::json&) {
            ++values;
            return true;
        };
        auto j = nlohmann::json::parse(text, counter, false);
        if (j.is_discarded()) {
            m_w.error(node, field, "is not valid JSON (write a mapping, or a JSON string)");
            return;
        }
        if (values > k_max_json_values) {
            m_w.error(node, field, fmt::format("is too large (over {} values)", k_max_json_values));
            return;
        }
        probe.post_data = std::move(j);
    }

    void headers(const YAML::Node& node, const std::string& field, ReadinessProbe& probe) {
        if (!node.IsMap()) {
            m_w.error(node, field, "must be a mapping of header names to values");
            return;
        }
        std::set<std::string> seen; // lower case
        for (const auto& [key, value] : m_w.entries(node, field)) {
            const std::string& name = key.Scalar();
            const std::string sub = join_path(field, name);
            if (!valid_header_name(name)) {
                m_w.error(key, sub, "is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)");
                continue;
            }
            if (!seen.insert(lower(name)).second) {
                m_w.error(key, sub, "duplicate header (header names are case-insensitive)");
                continue;
            }
            auto v = m_w.scalar(value, sub); // the value is never quoted in a message: it may be a token
            if (!v) {
                continue;
            }
            if (v->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
                m_w.error(value, sub, "must be one line");
                continue;
            }
            probe.headers.emplace_back(name, *v);
            m_spec.locations[sub] = m_w.loc(key);
        }
    }

    // ---- replica_policy: {min_replicas, max_replicas, target_qps_per_replica, up/downscale delays}
    void replica_policy(const YAML::Node& node, const std::string& path, ServiceSpec& service) {
        if (!node.IsMap()) {
            m_w.error(node, path,
                      "must be a mapping (min_replicas, max_replicas, target_qps_per_replica ...)");
            return;
        }
        std::optional<YAML::Node> min_node;
        std::optional<YAML::Node> max_node;
        std::optional<YAML::Node> qps_node;
        std::optional<int> min_replicas;
        std::optional<int> max_replicas;
        std::optional<double> qps;
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.admit(key, "service.replica_policy", path, m_spec.notes)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            m_spec.locations[field] = m_w.loc(key);
            if (k == "min_replicas") {
                min_node = value;
                min_replicas = count(value, field);
            } else if (k == "max_replicas") {
                max_node = value;
                max_replicas = count(value, field);
            } else if (k == "target_qps_per_replica") {
                qps_node = value;
                qps = target_qps(value, field);
            } else if (k == "upscale_delay_seconds" || k == "downscale_delay_seconds") {
                if (auto s = seconds(value, field, true)) {
                    (k == "upscale_delay_seconds" ? service.upscale_delay_seconds
                                                  : service.downscale_delay_seconds) = *s;
                }
            }
        }
        if (!min_node) {
            m_w.error(node, join_path(path, "min_replicas"), "is required (the fewest replicas to run)");
        }
        if (min_replicas) {
            service.min_replicas = *min_replicas;
        }
        // SkyPilot's checks (SkyServiceSpec.__init__), each at the field to change.
        if (max_replicas && min_replicas && *max_replicas < *min_replicas) {
            m_w.error(*max_node, join_path(path, "max_replicas"),
                      fmt::format("must be at least min_replicas ({})", *min_replicas));
            return;
        }
        if (qps_node && !max_node) {
            m_w.error(*qps_node, join_path(path, "target_qps_per_replica"),
                      "needs max_replicas (the most replicas to scale up to)");
            return;
        }
        if (!qps_node && max_replicas && min_replicas && *max_replicas != *min_replicas) {
            m_w.error(*max_node, join_path(path, "max_replicas"),
                      fmt::format("differs from min_replicas ({}): to autoscale, set target_qps_per_replica",
                                  *min_replicas));
            return;
        }
        // max == min is a fixed count, as SkyPilot reads it: nothing to scale.
        if (qps && max_replicas && min_replicas && *max_replicas > *min_replicas) {
            service.max_replicas = *max_replicas;
            service.target_qps_per_replica = *qps;
        }
    }

    std::optional<double> target_qps(const YAML::Node& value, const std::string& field) {
        if (value.IsMap()) {
            m_w.error(
                value, field,
                "is a SkyPilot feature tandem does not support yet (a target per accelerator type); give "
                "one number, the queries per second each replica should serve");
            return std::nullopt;
        }
        auto text = m_w.scalar(value, field);
        if (!text) {
            return std::nullopt;
        }
        auto v = number(*text);
        if (!v || *v <= 0) {
            m_w.error(value, field, "must be a number of queries per second, more than 0");
            return std::nullopt;
        }
        return v;
    }

    // ---- ports, load_balancing_policy, tls, pool
    void port(const YAML::Node& value, const std::string& field, ServiceSpec& service) {
        auto text = m_w.scalar(value, field);
        if (!text) {
            return;
        }
        auto n = whole_number(*text);
        if (!n || *n < 1 || *n > 65535) {
            m_w.error(value, field, fmt::format("'{}' is not a port: one number, 1-65535", *text));
            return;
        }
        service.port = *n;
    }

    void load_balancing_policy(const YAML::Node& value, const std::string& field, ServiceSpec& service) {
        auto text = m_w.scalar(value, field);
        if (!text) {
            return;
        }
        const std::string name = lower(*text);
        if (std::find(k_lb_policies.begin(), k_lb_policies.end(), name) == k_lb_policies.end()) {
            m_w.error(value, field,
                      fmt::format("'{}' is not a load balancing policy (one of: {})", *text,
                                  fmt::join(k_lb_policies, ", ")));
            return;
        }
        service.load_balancing_policy = name;
    }

    void tls(const YAML::Node& node, const std::string& path, ServiceSpec& service) {
        if (!node.IsMap()) {
            m_w.error(node, path, "must be a mapping (keyfile, certfile)");
            return;
        }
        bool key_written = false;
        bool cert_written = false;
        std::optional<std::string> keyfile;
        std::optional<std::string> certfile;
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.admit(key, "service.tls", path, m_spec.notes)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            m_spec.locations[field] = m_w.loc(key);
            (k == "keyfile" ? key_written : cert_written) = true;
            if (auto v = m_w.scalar(value, field)) {
                (k == "keyfile" ? keyfile : certfile) = local_file(value, field, *v);
            }
        }
        if (!key_written) {
            m_w.error(node, join_path(path, "keyfile"), "is required (the TLS private key file)");
        }
        if (!cert_written) {
            m_w.error(node, join_path(path, "certfile"), "is required (the TLS certificate file)");
        }
        if (keyfile && certfile) {
            service.tls = std::pair{*keyfile, *certfile};
        }
    }

    // As file_mounts sources (spec_loader.cpp): `~` is the home folder, a relative path is read from
    // base_dir. The file must exist; the absolute path comes back.
    std::optional<std::string> local_file(const YAML::Node& value, const std::string& field,
                                          const std::string& written) {
        const PathInfo p = m_options.local_path(written);
        if (written.empty() || p.kind == PathKind::missing) {
            m_w.error(value, field, fmt::format("'{}' does not exist", written));
            return std::nullopt;
        }
        if (p.kind != PathKind::file) {
            m_w.error(value, field, fmt::format("'{}' is not a file", written));
            return std::nullopt;
        }
        return p.path;
    }

    // `pool: false` is a service; `pool: true` (or newer SkyPilot's pool settings) a worker pool.
    void pool(const YAML::Node& key, const YAML::Node& value, const std::string& field) {
        if (value.IsNull()) {
            return;
        }
        if (value.IsScalar()) {
            auto on = m_w.boolean(value, field);
            if (!on || !*on) {
                return;
            }
        }
        const SkyKey pools{"service", "pool", KeyUse::not_yet, "SkyPilot worker pools"};
        m_w.error(key, field, refusal_message(pools));
    }

    // ---- numbers
    // A whole number, 0 or more (replica counts).
    std::optional<int> count(const YAML::Node& value, const std::string& field) {
        auto text = m_w.scalar(value, field);
        if (!text) {
            return std::nullopt;
        }
        auto n = whole_number(*text);
        if (!n || *n < 0) {
            m_w.error(value, field, fmt::format("'{}' is not a whole number, 0 or more", *text));
            return std::nullopt;
        }
        return n;
    }

    // A number of seconds (SkyPilot takes any number); a fraction is rounded up to whole seconds, as
    // Kubernetes keeps them.
    std::optional<std::int64_t> seconds(const YAML::Node& value, const std::string& field, bool zero_ok) {
        auto text = m_w.scalar(value, field);
        if (!text) {
            return std::nullopt;
        }
        auto v = number(*text);
        if (!v || *v < 0 || (!zero_ok && *v <= 0)) {
            m_w.error(value, field,
                      fmt::format("must be a number of seconds, {}", zero_ok ? "0 or more" : "more than 0"));
            return std::nullopt;
        }
        if (*v > static_cast<double>(k_max_seconds)) {
            m_w.error(value, field, fmt::format("is too large (at most {} seconds)", k_max_seconds));
            return std::nullopt;
        }
        return static_cast<std::int64_t>(std::ceil(*v));
    }

    YamlWalker& m_w;
    TaskSpec& m_spec;
    const LoadOptions& m_options;
};

} // namespace

void parse_service_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec,
                           const LoadOptions& options) {
    ServiceParser(w, spec, options).section(node);
}

} // namespace tandem::detail
