#include "core/resources_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/quantity.hpp"
#include "core/value_checks.hpp"

namespace tandem::detail {

namespace {

std::string lower(std::string text) {
    for (auto& c : text) {
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    return text;
}

// Fields kept as hints (see Resources::hints), judged per backend in backend_support.cpp.
const std::vector<std::string_view> k_hint_keys{"disk_tier", "network_tier", "autostop",        "local_disk",
                                                "job_recovery", "max_hourly_cost", "priority", "priority_class"};

// The fields that say where a set runs: an alternative that sets one replaces all of the base's.
const std::vector<std::string_view> k_pin_keys{"infra", "cloud", "region", "zone"};

bool contains(const std::vector<std::string_view>& list, std::string_view key) {
    return std::find(list.begin(), list.end(), key) != list.end();
}

// SkyPilot's virtual instance types on Slurm and Kubernetes: "4CPU--16GB" or "4CPU--16GB--H100:1".
struct VirtualInstance {
    double cpus = 0;
    double memory_gb = 0;
    std::optional<Accelerator> accelerator;
};

std::optional<VirtualInstance> parse_virtual_instance(std::string_view text) {
    auto number_before = [](std::string_view part, std::string_view unit) -> std::optional<double> {
        if (!part.ends_with(unit)) {
            return std::nullopt;
        }
        part.remove_suffix(unit.size());
        auto n = parse_accelerator_count(part);
        return n ? std::optional<double>(*n) : std::nullopt;
    };
    const auto first = text.find("--");
    if (first == std::string_view::npos) {
        return std::nullopt;
    }
    VirtualInstance out;
    auto cpus = number_before(text.substr(0, first), "CPU");
    std::string_view rest = text.substr(first + 2);
    const auto second = rest.find("--");
    auto memory = number_before(rest.substr(0, second), "GB");
    if (!cpus || !memory) {
        return std::nullopt;
    }
    out.cpus = *cpus;
    out.memory_gb = *memory;
    if (second != std::string_view::npos) {
        auto acc = parse_accelerator(rest.substr(second + 2));
        if (!acc) {
            return std::nullopt;
        }
        out.accelerator = *acc;
    }
    return out;
}

class ResourcesParser {
public:
    ResourcesParser(YamlWalker& w, TaskSpec& spec) : m_w(w), m_spec(spec) {}

    void section(const YAML::Node& node) {
        if (node.IsNull()) {
            return;
        }
        if (!node.IsMap()) {
            m_w.error(node, "resources", "must be a mapping");
            return;
        }
        std::optional<YAML::Node> any_of;
        std::optional<YAML::Node> ordered;
        for (const auto& [key, value] : m_w.entries(node, "resources")) {
            if (key.Scalar() == "any_of") {
                any_of = value;
                m_spec.locations["resources.any_of"] = m_w.loc(key);
            } else if (key.Scalar() == "ordered") {
                ordered = value;
                m_spec.locations["resources.ordered"] = m_w.loc(key);
            }
        }
        m_spec.resources = resources(node, "resources", true);
        if (any_of && ordered) {
            m_w.error(*ordered, "resources.ordered", "cannot be combined with resources.any_of; use one");
            return;
        }
        if (!any_of && !ordered) {
            refuse_cloud_only(m_spec.resources, "resources");
            return;
        }
        const YAML::Node& alts = any_of ? *any_of : *ordered;
        const std::string name = any_of ? "resources.any_of" : "resources.ordered";
        if (!alts.IsSequence() || alts.size() == 0) {
            m_w.error(alts, name, "must be a non-empty list of resource sets");
            return;
        }
        m_spec.alternatives_ordered = !any_of;
        bool runnable = false;
        for (std::size_t i = 0; i < alts.size(); ++i) {
            const std::string path = fmt::format("{}[{}]", name, i);
            if (!alts[i].IsMap()) {
                m_w.error(alts[i], path, "must be a mapping of resource fields");
                continue;
            }
            Resources merged = m_spec.resources;
            Resources alt = resources(alts[i], path, false);
            overlay(merged, alt);
            runnable = runnable || merged.cloud_only.empty();
            m_spec.alternatives.push_back(std::move(merged));
        }
        // An alternative that needs a cloud is a rejection in `plan`; only when none is left is the task
        // refused, with each alternative's reason.
        if (!runnable) {
            for (std::size_t i = 0; i < m_spec.alternatives.size(); ++i) {
                refuse_cloud_only(m_spec.alternatives[i], fmt::format("{}[{}]", name, i));
            }
        }
    }

private:
    void refuse_cloud_only(const Resources& r, const std::string& path) {
        for (const auto& [field, reason] : r.cloud_only) {
            // A base field inherited by an alternative is written at the base.
            const bool own = m_spec.locations.count(join_path(path, field)) > 0;
            const std::string written = join_path(own ? path : "resources", field);
            m_w.error_at(m_spec.location_of(written), written, reason);
        }
    }

    // Fields set in `alt` replace those of the base, as in SkyPilot (labels are merged).
    static void overlay(Resources& base, const Resources& alt) {
        auto has = [&](const char* f) {
            return std::any_of(alt.locations.begin(), alt.locations.end(), [&](const auto& kv) {
                return kv.first.size() > std::strlen(f) &&
                       kv.first.compare(kv.first.size() - std::strlen(f), std::strlen(f), f) == 0;
            });
        };
        if (has(".infra") || has(".cloud")) { // a new place: the base's place no longer applies
            base.infra.reset();
            for (auto key : k_pin_keys) {
                base.cloud_only.erase(std::string(key));
            }
        }
        if (alt.infra) {
            base.infra = alt.infra;
        }
        if (has(".accelerators") || has(".gpus")) {
            base.accelerators = alt.accelerators;
            base.accelerators_ordered = alt.accelerators_ordered;
        }
        if (alt.cpus) {
            base.cpus = alt.cpus;
        }
        if (alt.memory_gb) {
            base.memory_gb = alt.memory_gb;
        }
        if (alt.disk_size_gb) {
            base.disk_size_gb = alt.disk_size_gb;
        }
        if (has(".image_id")) { // `image_id: null` in an alternative: no image there (llm/gpt-2)
            base.image_id = alt.image_id;
            base.cloud_only.erase("image_id");
        }
        if (has(".ports")) {
            base.ports = alt.ports;
        }
        for (const auto& [k, v] : alt.labels) {
            base.labels[k] = v;
        }
        if (alt.use_spot) {
            base.use_spot = alt.use_spot;
        }
        for (const auto& [k, v] : alt.hints) {
            base.hints[k] = v;
        }
        for (const auto& [k, v] : alt.cloud_only) {
            base.cloud_only[k] = v;
        }
        for (const auto& [k, v] : alt.locations) {
            base.locations[k] = v;
        }
    }

    Resources resources(const YAML::Node& node, const std::string& path, bool top_level) {
        Resources r;
        Place place;
        std::optional<std::string> instance_type;
        for (const auto& [key, value] : m_w.entries(node, path)) {
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            if (!m_w.admit(key, "resources", path, m_spec.notes)) {
                continue;
            }
            if ((k == "any_of" || k == "ordered")) {
                if (!top_level) {
                    m_w.error(key, field, "cannot be nested inside another resource set");
                }
                continue;
            }
            r.locations[field] = m_w.loc(key);
            m_spec.locations[field] = m_w.loc(key);
            if (k == "infra") {
                infra(value, field, r);
            } else if (k == "accelerators" || k == "gpus") {
                if (r.locations.count(join_path(path, k == "gpus" ? "accelerators" : "gpus"))) {
                    m_w.error(key, field, "cannot be given with both accelerators and gpus; use one");
                }
                accelerators(value, field, r);
            } else if (k == "cpus") {
                r.cpus = m_w.parsed<Quantity>(value, field, parse_cpus);
            } else if (k == "memory") {
                r.memory_gb = m_w.parsed<Quantity>(value, field, parse_memory_gb);
            } else if (k == "disk_size" || k == "ephemeral_storage") {
                r.disk_size_gb = m_w.parsed<double>(value, field, parse_disk_gb);
            } else if (k == "image_id") {
                if (value.IsMap()) {
                    r.cloud_only["image_id"] =
                        "per-region image ids are cloud-only; give one image (a container image on k8s)";
                } else {
                    // null (SkyPilot's schema allows it): the default image, or none, here.
                    r.image_id = m_w.scalar(value, field, true);
                }
            } else if (k == "ports") {
                ports(value, field, r);
            } else if (k == "labels") {
                labels(value, field, r);
            } else if (k == "use_spot") {
                r.use_spot = m_w.boolean(value, field);
            } else if (k == "cloud" || k == "region" || k == "zone") {
                if (auto v = m_w.scalar(value, field)) {
                    place.set(k, *v, value);
                }
            } else if (k == "instance_type") {
                instance_type = m_w.scalar(value, field);
            } else if (contains(k_hint_keys, k) || k == "spot_recovery") {
                if (k == "job_recovery" || k == "spot_recovery") {
                    r.job_recovery = job_recovery(value, field);
                }
                if (auto j = m_w.to_json(value, field)) {
                    r.hints[k == "spot_recovery" ? "job_recovery" : k] = std::move(*j);
                }
            }
        }
        legacy_cloud(r, path, place);
        if (instance_type) {
            virtual_instance(r, *instance_type);
        }
        return r;
    }

    // SkyPilot's job_recovery (sky/utils/schemas.py): a strategy name ("none" turns recovery off), or
    // {strategy, max_restarts_on_errors, recover_on_exit_codes: an exit code or a list of them}.
    std::optional<JobRecovery> job_recovery(const YAML::Node& value, const std::string& field) {
        JobRecovery out;
        if (value.IsNull()) {
            return std::nullopt;
        }
        if (value.IsScalar()) {
            auto text = m_w.scalar(value, field);
            if (!text) {
                return std::nullopt;
            }
            out.strategy = *text;
            out.disabled = lower(*text) == "none";
            return out;
        }
        if (!value.IsMap()) {
            m_w.error(value, field, "must be a strategy name or a mapping (strategy, max_restarts_on_errors, "
                                    "recover_on_exit_codes), not " + detail::YamlWalker::kind_name(value));
            return std::nullopt;
        }
        auto code = [&](const YAML::Node& node, const std::string& path) -> std::optional<int> {
            auto text = m_w.scalar(node, path);
            if (!text) {
                return std::nullopt;
            }
            int v = 0;
            auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
            if (ec != std::errc() || end != text->data() + text->size() || v < 0 || v > 255) {
                m_w.error(node, path, fmt::format("must be an exit code, 0 to 255, not '{}'", *text));
                return std::nullopt;
            }
            if (v == 0) {
                m_w.error(node, path, "0 is success: only a failing exit code (1 to 255) can be recovered");
                return std::nullopt;
            }
            return v;
        };
        for (const auto& [key, item] : m_w.entries(value, field)) {
            const std::string k = key.Scalar();
            const std::string path = field + "." + k;
            if (k == "strategy") {
                if (!item.IsNull()) {
                    if (auto text = m_w.scalar(item, path)) {
                        out.strategy = *text;
                        out.disabled = lower(*text) == "none";
                    }
                }
            } else if (k == "max_restarts_on_errors") {
                auto text = m_w.scalar(item, path);
                int v = -1;
                if (text) {
                    auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
                    if (ec != std::errc() || end != text->data() + text->size() || v < 0) {
                        v = -1;
                    }
                }
                if (text && (v < 0 || v > k_max_restarts_on_errors)) {
                    m_w.error(item, path, fmt::format("must be a whole number from 0 to {}, not '{}'",
                                                      k_max_restarts_on_errors, *text));
                } else if (text) {
                    out.max_restarts_on_errors = v;
                }
            } else if (k == "recover_on_exit_codes") {
                if (item.IsSequence()) {
                    for (std::size_t i = 0; i < item.size(); ++i) {
                        if (auto c = code(item[i], fmt::format("{}[{}]", path, i))) {
                            out.recover_on_exit_codes.push_back(*c);
                        }
                    }
                } else if (auto c = code(item, path)) {
                    out.recover_on_exit_codes.push_back(*c);
                }
            } else {
                m_w.known_key(key, field, {"strategy", "max_restarts_on_errors", "recover_on_exit_codes"});
            }
        }
        std::sort(out.recover_on_exit_codes.begin(), out.recover_on_exit_codes.end());
        out.recover_on_exit_codes.erase(std::unique(out.recover_on_exit_codes.begin(), out.recover_on_exit_codes.end()),
                                        out.recover_on_exit_codes.end());
        return out;
    }

    // `infra: aws/us-east-1` names a cloud: this set cannot run here (a rejection, not a parse error).
    void infra(const YAML::Node& value, const std::string& field, Resources& r) {
        auto text = m_w.scalar(value, field);
        if (!text || *text == "*") { // `*`: any infra
            return;
        }
        auto pin = parse_infra(*text);
        if (pin) {
            r.infra = *pin;
            return;
        }
        const std::string head = text->substr(0, text->find('/'));
        if (is_cloud_name(head) || head == "*") {
            r.cloud_only["infra"] = fmt::format(
                "infra '{}' names a cloud; tandem runs on k8s[/CONTEXT], slurm[/CLUSTER[/PARTITION]] or local",
                *text);
            return;
        }
        m_w.error(value, field, pin.error());
    }

    // `cloud:`, `region:`, `zone:` as written.
    struct Place {
        std::optional<std::string> cloud, region, zone;
        YAML::Node cloud_node, region_node, zone_node;
        void set(const std::string& key, std::string value, const YAML::Node& node) {
            if (key == "cloud") {
                cloud = std::move(value);
                cloud_node = node;
            } else if (key == "region") {
                region = std::move(value);
                region_node = node;
            } else {
                zone = std::move(value);
                zone_node = node;
            }
        }
    };

    // Older SkyPilot files say `cloud: kubernetes` (+ `region: CONTEXT`) or `cloud: slurm` (+ `region:
    // CLUSTER`, `zone: PARTITION`) where newer ones say `infra`. A cloud, or a region without one, needs a
    // cloud VM: this set cannot run here.
    void legacy_cloud(Resources& r, const std::string& path, const Place& place) {
        if (!place.cloud) {
            if (place.region || place.zone) {
                const char* field = place.region ? "region" : "zone";
                r.cloud_only[field] = fmt::format(
                    "{} without cloud names a cloud {}; use infra: k8s/CONTEXT or slurm/CLUSTER[/PARTITION]",
                    field, field);
            }
            return;
        }
        if (is_cloud_name(*place.cloud)) {
            r.cloud_only["cloud"] = fmt::format(
                "cloud '{}' names a cloud; tandem runs on k8s, slurm or local", *place.cloud);
            return;
        }
        auto kind = parse_infra(*place.cloud);
        if (!kind || !kind->cluster.empty()) {
            m_w.error(place.cloud_node, path + ".cloud",
                      fmt::format("cloud '{}' is not supported; use infra: k8s, slurm or local", *place.cloud));
            return;
        }
        if (place.zone && kind->kind != "slurm") {
            // SkyPilot's own words for Kubernetes.
            m_w.error(place.zone_node, path + ".zone",
                      kind->kind == "k8s" ? "Kubernetes does not support setting zone; the cluster is the "
                                            "kubeconfig context (region)"
                                          : "local takes no zone");
            return;
        }
        if (place.zone && !place.region) {
            m_w.error(place.zone_node, path + ".zone",
                      "cannot specify partition (zone) without specifying cluster (region) for Slurm");
            return;
        }
        std::string text = *place.cloud + (place.region ? "/" + *place.region : "") +
                           (place.zone ? "/" + *place.zone : "");
        auto pin = parse_infra(text);
        if (!pin) {
            m_w.error(place.region ? place.region_node : place.cloud_node, path + ".region", pin.error());
            return;
        }
        if (r.infra) {
            m_w.error(place.cloud_node, path + ".cloud", "cannot be combined with infra; use infra");
            return;
        }
        r.infra = *pin;
    }

    // A virtual instance type fills cpus, memory and accelerators the set does not give itself; any other
    // instance type is a cloud's.
    static void virtual_instance(Resources& r, const std::string& text) {
        auto v = parse_virtual_instance(text);
        if (!v) {
            r.cloud_only["instance_type"] = fmt::format(
                "instance_type '{}' is a cloud instance type; on slurm and k8s only SkyPilot's virtual "
                "types (4CPU--16GB, 8CPU--32GB--H100:1) mean something; or give cpus, memory, accelerators",
                text);
            return;
        }
        if (!r.cpus) {
            r.cpus = Quantity{v->cpus, false};
        }
        if (!r.memory_gb) {
            r.memory_gb = Quantity{v->memory_gb, false};
        }
        if (v->accelerator && r.accelerators.empty()) {
            r.accelerators = {*v->accelerator};
        }
    }

    void accelerators(const YAML::Node& node, const std::string& path, Resources& r) {
        r.accelerators.clear();
        auto one = [&](const YAML::Node& item, const std::string& item_path) {
            if (item.IsMap()) {
                if (item.size() != 1) {
                    m_w.error(item, item_path, "each list entry must be NAME:COUNT or {NAME: COUNT}");
                    return;
                }
                auto it = item.begin();
                accelerator_entry(it->first, it->second, item_path, r);
                return;
            }
            if (auto text = m_w.scalar(item, item_path)) {
                auto acc = parse_accelerator(*text);
                acc ? r.accelerators.push_back(*acc) : m_w.error(item, item_path, acc.error());
            }
        };
        if (node.IsSequence()) { // a list: ordered preference
            if (node.size() == 0) {
                m_w.error(node, path, "must not be an empty list");
            }
            r.accelerators_ordered = true;
            for (std::size_t i = 0; i < node.size(); ++i) {
                one(node[i], fmt::format("{}[{}]", path, i));
            }
        } else if (node.IsMap()) { // {H100: 8} or a set {A100: 1, V100: 1}: any of them
            r.accelerators_ordered = false;
            for (const auto& [key, value] : m_w.entries(node, path)) {
                accelerator_entry(key, value, path, r);
            }
            if (node.size() == 0) {
                m_w.error(node, path, "must not be empty");
            }
        } else if (!node.IsNull()) {
            one(node, path);
        }
    }

    void accelerator_entry(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                           Resources& r) {
        if (!key.IsScalar()) {
            m_w.error(key, path, "accelerator names must be plain strings");
            return;
        }
        auto acc = parse_accelerator(key.Scalar());
        if (!acc) {
            m_w.error(key, path, acc.error());
            return;
        }
        // `{A100-80GB:4, H100:8}` and `{'A100:1', 'V100:1'}`: YAML reads keys with null values, which
        // SkyPilot takes as NAME:COUNT each.
        if (key.Scalar().find(':') != std::string::npos) {
            if (!value.IsNull()) {
                m_w.error(key, path, "write {NAME: COUNT} or {NAME:COUNT}, not {NAME:COUNT: ...}");
                return;
            }
            r.accelerators.push_back(*acc);
            return;
        }
        if (!value.IsNull()) {
            auto text = m_w.scalar(value, path);
            if (!text) {
                return;
            }
            auto count = parse_accelerator_count(*text);
            if (!count) {
                m_w.error(value, path, count.error());
                return;
            }
            acc->count = *count;
        }
        r.accelerators.push_back(*acc);
    }

    void ports(const YAML::Node& node, const std::string& path, Resources& r) {
        auto one = [&](const YAML::Node& item, const std::string& item_path) {
            if (auto text = m_w.scalar(item, item_path)) {
                auto p = parse_port_range(*text);
                p ? r.ports.push_back(*p) : m_w.error(item, item_path, p.error());
            }
        };
        if (node.IsSequence()) {
            for (std::size_t i = 0; i < node.size(); ++i) {
                one(node[i], fmt::format("{}[{}]", path, i));
            }
        } else {
            one(node, path);
        }
    }

    void labels(const YAML::Node& node, const std::string& path, Resources& r) {
        if (!node.IsMap()) {
            m_w.error(node, path, "must be a mapping of label names to values");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (auto v = m_w.scalar(value, join_path(path, key.Scalar()), true)) {
                r.labels[key.Scalar()] = *v;
            } else if (value.IsNull()) {
                r.labels[key.Scalar()] = "";
            }
        }
    }

    YamlWalker& m_w;
    TaskSpec& m_spec;
};

} // namespace

void parse_resources_section(YamlWalker& w, const YAML::Node& node, TaskSpec& spec) {
    ResourcesParser(w, spec).section(node);
}

} // namespace tandem::detail
