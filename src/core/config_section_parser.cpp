#include "core/config_section_parser.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/backend_traits.hpp"
#include "core/quantity.hpp"
#include "core/value_checks.hpp"

namespace tandem::detail {

namespace {

// The kind whose task settings are config.<key>.
const BackendTraits* settings_of(const std::string& key) {
    for (const auto& t : all_backend_traits()) {
        if (t.parse_settings != nullptr && t.settings_key == key) {
            return &t;
        }
    }
    return nullptr;
}

class ConfigParser {
public:
    ConfigParser(YamlWalker& w, TaskSpec& spec) : m_w(w), m_spec(spec) {}

    void section(const YAML::Node& node) {
        if (node.IsNull()) {
            return;
        }
        if (!node.IsMap()) {
            m_w.error(node, "config", "must be a mapping");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, "config")) {
            if (!m_w.admit(key, "config", "config", m_spec.notes)) {
                continue;
            }
            const std::string path = "config." + key.Scalar();
            if (value.IsNull()) {
                continue;
            }
            if (key.Scalar() == "pending_timeout") {
                m_spec.locations[path] = m_w.loc(key);
                if (auto v = m_w.scalar(value, path)) {
                    auto seconds = parse_duration_seconds(*v);
                    seconds ? void(m_spec.pending_timeout_seconds = *seconds)
                            : m_w.error(value, path, seconds.error());
                }
                continue;
            }
            if (!value.IsMap()) {
                m_w.error(value, path, "must be a mapping");
                continue;
            }
            if (const auto* t = settings_of(key.Scalar())) {
                t->parse_settings(m_w, value, path, m_spec);
            }
        }
    }

    // Each key of a backend's section that the key table admits, with its field path, its location kept.
    template <typename F> void settings(const YAML::Node& node, const std::string& path, F&& each) {
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.admit(key, path, path, m_spec.notes)) {
                continue;
            }
            const std::string field = join_path(path, key.Scalar());
            m_spec.locations[field] = m_w.loc(key);
            each(key.Scalar(), value, field);
        }
    }

    void slurm_section(const YAML::Node& node, const std::string& path) {
        std::optional<std::pair<YAML::Node, std::string>> sbatch;
        settings(node, path, [&](const std::string& k, const YAML::Node& value, const std::string& field) {
            if (k == "sbatch_options") {
                sbatch = std::pair{value, field}; // after the rest: explicit fields win over its copies
                return;
            }
            if (k == "quota") {
                slurm_quota(value, field);
                return;
            }
            if (k == "provision_timeout") {
                m_spec.slurm.provision_timeout_seconds = provision_timeout(value, field);
                return;
            }
            auto v = m_w.scalar(value, field);
            if (!v) {
                return;
            }
            if (k == "partition") {
                m_spec.slurm.partition = v;
            } else if (k == "cpu_partition") {
                m_spec.slurm.cpu_partition = v;
            } else if (k == "account") {
                m_spec.slurm.account = v;
            } else if (k == "qos") {
                m_spec.slurm.qos = v;
            } else if (k == "constraint") {
                m_spec.slurm.constraint = v;
            } else if (k == "time") {
                auto minutes = parse_slurm_time_minutes(*v);
                minutes ? void(m_spec.slurm.time = v) : m_w.error(value, field, minutes.error());
            }
        });
        if (sbatch) {
            sbatch_options(sbatch->first, sbatch->second);
        }
    }

    // SkyPilot's sbatch_options: {option: value}, a value true (or null) for a bare flag, false to leave
    // it out. Options tandem sets itself from the task are refused here, with the field to use instead.
    void sbatch_options(const YAML::Node& node, const std::string& path) {
        if (node.IsNull()) {
            return;
        }
        if (!node.IsMap()) {
            m_w.error(node, path, "must be a mapping of sbatch option to value");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, path)) {
            const std::string field = join_path(path, key.Scalar());
            auto name = sbatch_option_name(key.Scalar());
            if (!name) {
                m_w.error(key, field, name.error());
                continue;
            }
            std::string text;
            if (!value.IsNull()) {
                auto v = m_w.scalar(value, field);
                if (!v) {
                    continue;
                }
                text = *v;
            }
            if (text == "false") {
                continue;
            }
            if (text.find_first_of("\n\r") != std::string::npos) {
                m_w.error(value, field, "must be one line");
                continue;
            }
            m_spec.locations[field] = m_w.loc(key);
            auto fold = [&](std::optional<std::string>& target) {
                if (!target) {
                    target = text;
                }
            };
            switch (name->kind) {
            case SbatchOption::partition:
                fold(m_spec.slurm.partition);
                break;
            case SbatchOption::account:
                fold(m_spec.slurm.account);
                break;
            case SbatchOption::qos:
                fold(m_spec.slurm.qos);
                break;
            case SbatchOption::constraint:
                fold(m_spec.slurm.constraint);
                break;
            case SbatchOption::time:
                if (auto minutes = parse_slurm_time_minutes(text); !minutes) {
                    m_w.error(value, field, minutes.error());
                } else {
                    fold(m_spec.slurm.time);
                }
                break;
            case SbatchOption::extra:
                m_spec.slurm.sbatch_options.emplace_back(name->name, text == "true" ? std::string() : text);
                break;
            }
        }
    }

    // SkyPilot's quota: {queue: QOS, account: ACCOUNT}.
    void slurm_quota(const YAML::Node& node, const std::string& path) {
        if (!node.IsMap()) {
            m_w.error(node, path, "must be a mapping (queue, account)");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.known_key(key, path, {"queue", "account"})) {
                continue;
            }
            const std::string field = join_path(path, key.Scalar());
            if (auto v = m_w.scalar(value, field)) {
                (key.Scalar() == "queue" ? m_spec.slurm.qos : m_spec.slurm.account) = v;
            }
        }
    }

    // Seconds (or a duration); a negative number (-1) waits for ever, as in SkyPilot, and is kept as -1.
    std::optional<std::int64_t> provision_timeout(const YAML::Node& value, const std::string& field) {
        auto v = m_w.scalar(value, field);
        if (!v) {
            return std::nullopt;
        }
        if (!v->empty() && (*v)[0] == '-') {
            auto n = parse_positive_int(std::string_view(*v).substr(1));
            if (!n) {
                m_w.error(value, field, "must be a whole number of seconds (-1: wait for ever)");
                return std::nullopt;
            }
            return -1;
        }
        auto seconds = parse_duration_seconds(*v);
        if (!seconds) {
            m_w.error(value, field, seconds.error());
            return std::nullopt;
        }
        return *seconds;
    }

    void k8s_section(const YAML::Node& node, const std::string& path) {
        settings(node, path, [&](const std::string& k, const YAML::Node& value, const std::string& field) {
            if (k == "pod_config") {
                if (!value.IsMap()) {
                    m_w.error(value, field, "must be a mapping (a partial Pod manifest)");
                } else if (auto j = m_w.to_json(value, field)) {
                    m_spec.kubernetes.pod_config = std::move(*j);
                }
            } else if (k == "backoff_limit") {
                if (auto v = m_w.scalar(value, field)) {
                    auto n = *v == "0" ? tl::expected<int, std::string>(0) : parse_positive_int(*v);
                    n ? void(m_spec.kubernetes.backoff_limit = *n)
                      : m_w.error(value, field, "must be a whole number of retries, 0 or more");
                }
            } else if (k == "provision_timeout") {
                m_spec.kubernetes.provision_timeout_seconds = provision_timeout(value, field);
            } else if (k == "remote_identity") {
                remote_identity(value, field);
            } else if (k == "custom_metadata") {
                custom_metadata(value, field);
            } else if (k == "kueue" || k == "quota") {
                kueue(value, field, k == "kueue" ? "local_queue_name" : "queue");
            } else if (k == "set_pod_resource_limits") {
                pod_resource_limits(value, field);
            } else if (k == "enable_docker" || k == "dws") {
                off_or_not_yet(value, field, k == "dws" ? "GKE's Dynamic Workload Scheduler" : "docker in the pod");
            } else if (auto v = m_w.scalar(value, field)) {
                (k == "namespace" ? m_spec.kubernetes.namespace_name : m_spec.kubernetes.queue) = v;
            }
        });
    }

    void remote_identity(const YAML::Node& value, const std::string& field) {
        if (value.IsMap()) {
            nlohmann::json by_context = nlohmann::json::object();
            for (const auto& [key, name] : m_w.entries(value, field)) {
                if (auto v = m_w.scalar(name, join_path(field, key.Scalar()))) {
                    by_context[key.Scalar()] = *v;
                }
            }
            m_spec.kubernetes.remote_identity = std::move(by_context);
        } else if (auto v = m_w.scalar(value, field)) {
            m_spec.kubernetes.remote_identity = *v;
        }
    }

    void custom_metadata(const YAML::Node& value, const std::string& field) {
        if (!value.IsMap()) {
            m_w.error(value, field, "must be a mapping (labels, annotations)");
            return;
        }
        nlohmann::json out = nlohmann::json::object();
        for (const auto& [key, map] : m_w.entries(value, field)) {
            const std::string sub = join_path(field, key.Scalar());
            if (!m_w.known_key(key, field, {"labels", "annotations"})) {
                continue;
            }
            if (!map.IsMap()) {
                m_w.error(map, sub, "must be a mapping of names to values");
                continue;
            }
            for (const auto& [name, text] : m_w.entries(map, sub)) {
                if (auto v = m_w.scalar(text, join_path(sub, name.Scalar()), true)) {
                    out[key.Scalar()][name.Scalar()] = *v;
                } else if (text.IsNull()) {
                    out[key.Scalar()][name.Scalar()] = "";
                }
            }
        }
        m_spec.kubernetes.custom_metadata = std::move(out);
    }

    // kueue: {local_queue_name: Q, admission_timeout: S}; quota: {queue: Q}. The queue is Kueue's
    // queue-name label, as config.kubernetes.queue.
    void kueue(const YAML::Node& value, const std::string& field, std::string_view queue_key) {
        if (!value.IsMap()) {
            m_w.error(value, field, fmt::format("must be a mapping ({}: NAME)", queue_key));
            return;
        }
        for (const auto& [key, v] : m_w.entries(value, field)) {
            const std::string sub = join_path(field, key.Scalar());
            if (key.Scalar() == "admission_timeout" && queue_key == "local_queue_name") {
                m_spec.kubernetes.provision_timeout_seconds = provision_timeout(v, sub);
                continue;
            }
            if (!m_w.known_key(key, field, {queue_key})) {
                continue;
            }
            if (auto text = m_w.scalar(v, sub)) {
                m_spec.kubernetes.queue = *text;
            }
        }
    }

    void pod_resource_limits(const YAML::Node& value, const std::string& field) {
        auto v = m_w.scalar(value, field);
        if (!v) {
            return;
        }
        if (*v == "true" || *v == "false") {
            if (*v == "true") {
                m_spec.kubernetes.pod_resource_limits = 1.0;
            }
            return;
        }
        double factor = 0;
        const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), factor);
        if (ec != std::errc() || end != v->data() + v->size() || !(factor >= 1) || factor > 1000) {
            m_w.error(value, field, "must be true, false or a multiplier of 1 or more");
            return;
        }
        m_spec.kubernetes.pod_resource_limits = factor;
    }

    // A switch tandem honours only when off (false, or {enabled: false}).
    void off_or_not_yet(const YAML::Node& value, const std::string& field, std::string_view what) {
        bool on = true;
        if (value.IsScalar()) {
            on = value.Scalar() != "false";
        } else if (value.IsMap()) {
            const YAML::Node enabled = value["enabled"];
            on = !enabled || !enabled.IsScalar() || enabled.Scalar() != "false";
        }
        if (on) {
            m_w.error(value, field,
                      fmt::format("is a SkyPilot feature tandem does not support yet ({})", what));
        }
    }

private:
    YamlWalker& m_w;
    TaskSpec& m_spec;
};

} // namespace

void parse_config_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec) {
    ConfigParser(w, spec).section(node);
}

void parse_slurm_settings(YamlWalker& w, const YAML::Node& node, const std::string& path, TaskSpec& spec) {
    ConfigParser(w, spec).slurm_section(node, path);
}

void parse_kubernetes_settings(YamlWalker& w, const YAML::Node& node, const std::string& path, TaskSpec& spec) {
    ConfigParser(w, spec).k8s_section(node, path);
}

} // namespace tandem::detail
