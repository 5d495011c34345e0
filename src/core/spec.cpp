#include "core/spec.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/quantity.hpp"

namespace tandem {

std::vector<ResourceOption> TaskSpec::options() const {
    std::vector<ResourceOption> out;
    const bool has_alternatives = !alternatives.empty();
    const std::vector<Resources> base_only{resources};
    const auto& sets = has_alternatives ? alternatives : base_only;
    for (std::size_t r = 0; r < sets.size(); ++r) {
        const Resources& set = sets[r];
        std::string prefix;
        if (has_alternatives) {
            prefix = fmt::format("{}[{}] ", alternatives_ordered ? "ordered" : "any_of", r);
        }
        const int set_tier = (has_alternatives && alternatives_ordered) ? static_cast<int>(r) * 1000 : 0;
        if (set.accelerators.empty()) {
            ResourceOption option{set, set_tier, prefix + "(no accelerator)"};
            out.push_back(std::move(option));
            continue;
        }
        for (std::size_t a = 0; a < set.accelerators.size(); ++a) {
            ResourceOption option{set, set_tier + (set.accelerators_ordered ? static_cast<int>(a) : 0),
                                  prefix + format_accelerator(set.accelerators[a])};
            option.resources.accelerators = {set.accelerators[a]};
            out.push_back(std::move(option));
        }
    }
    return out;
}

SourceLoc TaskSpec::location_of(const std::string& path) const {
    if (auto it = locations.find(path); it != locations.end()) {
        return it->second;
    }
    return SourceLoc{source_file, 1, 1};
}

std::optional<int> ServiceSpec::serving_port(const Resources& resources) const {
    if (port) {
        return port;
    }
    if (resources.ports.size() != 1) {
        return std::nullopt;
    }
    const std::string& text = resources.ports.front(); // "8080", or a range "8000-8010"
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1 || value > 65535) {
        return std::nullopt;
    }
    return value;
}

namespace {

nlohmann::json resources_json(const Resources& r) {
    nlohmann::json j = nlohmann::json::object();
    if (r.infra) {
        j["infra"] = format_infra(*r.infra);
    }
    if (!r.accelerators.empty()) {
        auto list = nlohmann::json::array();
        for (const auto& a : r.accelerators) {
            list.push_back(format_accelerator(a));
        }
        j["accelerators"] = list;
        j["accelerators_ordered"] = r.accelerators_ordered;
    }
    auto quantity = [](const Quantity& q) { return format_number(q.value) + (q.at_least ? "+" : ""); };
    if (r.cpus) {
        j["cpus"] = quantity(*r.cpus);
    }
    if (r.memory_gb) {
        j["memory"] = quantity(*r.memory_gb);
    }
    if (r.disk_size_gb) {
        j["disk_size"] = *r.disk_size_gb;
    }
    if (r.image_id) {
        j["image_id"] = *r.image_id;
    }
    if (!r.ports.empty()) {
        j["ports"] = r.ports;
    }
    if (!r.labels.empty()) {
        j["labels"] = r.labels;
    }
    if (r.use_spot) {
        j["use_spot"] = *r.use_spot;
    }
    return j;
}

// In SkyPilot's shape (readiness_probe, replicas or replica_policy ...). Header values may carry tokens:
// names only.
nlohmann::json service_json(const ServiceSpec& s) {
    const ReadinessProbe& p = s.readiness_probe;
    nlohmann::json probe{{"path", p.path},
                         {"initial_delay_seconds", p.initial_delay_seconds},
                         {"timeout_seconds", p.timeout_seconds}};
    if (p.post_data) {
        probe["post_data"] = *p.post_data;
    }
    if (!p.headers.empty()) {
        probe["headers"] = nlohmann::json::object();
        for (const auto& [name, value] : p.headers) {
            probe["headers"][name] = "<redacted>";
        }
    }
    nlohmann::json j{{"readiness_probe", std::move(probe)}};
    if (s.has_replica_policy) {
        nlohmann::json policy{{"min_replicas", s.min_replicas},
                              {"upscale_delay_seconds", s.upscale_delay_seconds},
                              {"downscale_delay_seconds", s.downscale_delay_seconds}};
        if (s.max_replicas) {
            policy["max_replicas"] = *s.max_replicas;
        }
        if (s.target_qps_per_replica) {
            policy["target_qps_per_replica"] = *s.target_qps_per_replica;
        }
        j["replica_policy"] = std::move(policy);
    } else {
        j["replicas"] = s.min_replicas;
    }
    if (s.port) {
        j["ports"] = *s.port;
    }
    if (s.load_balancing_policy) {
        j["load_balancing_policy"] = *s.load_balancing_policy;
    }
    if (s.tls) {
        j["tls"] = {{"keyfile", s.tls->first}, {"certfile", s.tls->second}};
    }
    return j;
}

} // namespace

nlohmann::json to_redacted_json(const TaskSpec& spec) {
    nlohmann::json j;
    j["name"] = spec.name;
    if (spec.workdir) {
        j["workdir"] = *spec.workdir;
    } else if (spec.git_workdir) {
        j["workdir"] = {{"url", spec.git_workdir->url}, {"ref", spec.git_workdir->ref}};
    }
    j["num_nodes"] = spec.num_nodes;
    j["resources"] = resources_json(spec.resources);
    if (!spec.alternatives.empty()) {
        auto list = nlohmann::json::array();
        for (const auto& r : spec.alternatives) {
            list.push_back(resources_json(r));
        }
        j["resources"][spec.alternatives_ordered ? "ordered" : "any_of"] = list;
    }
    j["envs"] = nlohmann::json::object();
    for (const auto& [k, v] : spec.envs) {
        j["envs"][k] = v;
    }
    // Secrets: names only. The values live in memory for the submit and nowhere else.
    j["secrets"] = nlohmann::json::array();
    for (const auto& [k, v] : spec.secrets) {
        j["secrets"].push_back(k);
    }
    if (!spec.file_mounts.empty()) {
        j["file_mounts"] = spec.file_mounts;
    }
    if (spec.sweep) {
        j["sweep"] = sweep_to_json(*spec.sweep);
    }
    j["setup"] = spec.setup;
    j["run"] = spec.run;
    auto& slurm = j["config"]["slurm"];
    slurm = nlohmann::json::object();
    auto put = [](nlohmann::json& obj, const char* key, const std::optional<std::string>& v) {
        if (v) {
            obj[key] = *v;
        }
    };
    put(slurm, "partition", spec.slurm.partition);
    put(slurm, "account", spec.slurm.account);
    put(slurm, "qos", spec.slurm.qos);
    put(slurm, "constraint", spec.slurm.constraint);
    put(slurm, "time", spec.slurm.time);
    auto& k8s = j["config"]["kubernetes"];
    k8s = nlohmann::json::object();
    put(k8s, "namespace", spec.kubernetes.namespace_name);
    put(k8s, "queue", spec.kubernetes.queue);
    if (spec.kubernetes.backoff_limit) {
        k8s["backoff_limit"] = *spec.kubernetes.backoff_limit;
    }
    if (!spec.kubernetes.pod_config.is_null()) {
        k8s["pod_config"] = spec.kubernetes.pod_config;
    }
    if (spec.pending_timeout_seconds) {
        j["config"]["pending_timeout"] = *spec.pending_timeout_seconds;
    }
    if (spec.service) {
        j["service"] = service_json(*spec.service);
    }
    return j;
}

} // namespace tandem
