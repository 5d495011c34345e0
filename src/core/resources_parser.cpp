#include "core/resources_parser.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/quantity.hpp"

namespace tandem::detail {

namespace {

const std::vector<std::string_view> k_resource_keys{
    "infra",  "accelerators", "cpus",   "memory",  "disk_size", "image_id", "ports",
    "labels", "use_spot",     "any_of", "ordered", "cloud",     "region"};
// SkyPilot fields that only make sense for cloud VMs: known, so they get a precise message.
const std::vector<std::string_view> k_cloud_only_keys{
    "zone",          "instance_type",    "disk_tier", "network_tier", "job_recovery",
    "spot_recovery", "accelerator_args", "autostop",  "priority"};

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
            return;
        }
        const YAML::Node& alts = any_of ? *any_of : *ordered;
        const std::string name = any_of ? "resources.any_of" : "resources.ordered";
        if (!alts.IsSequence() || alts.size() == 0) {
            m_w.error(alts, name, "must be a non-empty list of resource sets");
            return;
        }
        m_spec.alternatives_ordered = !any_of;
        for (std::size_t i = 0; i < alts.size(); ++i) {
            const std::string path = fmt::format("{}[{}]", name, i);
            if (!alts[i].IsMap()) {
                m_w.error(alts[i], path, "must be a mapping of resource fields");
                continue;
            }
            Resources merged = m_spec.resources;
            Resources alt = resources(alts[i], path, false);
            overlay(merged, alt);
            m_spec.alternatives.push_back(std::move(merged));
        }
    }

private:
    // Fields set in `alt` replace those of the base, as in SkyPilot.
    static void overlay(Resources& base, const Resources& alt) {
        auto has = [&](const char* f) {
            return std::any_of(alt.locations.begin(), alt.locations.end(), [&](const auto& kv) {
                return kv.first.size() > std::strlen(f) &&
                       kv.first.compare(kv.first.size() - std::strlen(f), std::strlen(f), f) == 0;
            });
        };
        if (alt.infra) {
            base.infra = alt.infra;
        }
        if (has(".accelerators")) {
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
        if (alt.image_id) {
            base.image_id = alt.image_id;
        }
        if (has(".ports")) {
            base.ports = alt.ports;
        }
        if (has(".labels")) {
            base.labels = alt.labels;
        }
        if (alt.use_spot) {
            base.use_spot = alt.use_spot;
        }
        for (const auto& [k, v] : alt.locations) {
            base.locations[k] = v;
        }
    }

    Resources resources(const YAML::Node& node, const std::string& path, bool top_level) {
        Resources r;
        std::optional<std::string> cloud;
        std::optional<std::string> region;
        YAML::Node cloud_node;
        YAML::Node region_node;
        for (const auto& [key, value] : m_w.entries(node, path)) {
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            if (std::find(k_cloud_only_keys.begin(), k_cloud_only_keys.end(), k) != k_cloud_only_keys.end()) {
                m_w.error(key, field, "is a cloud-only field; not supported on slurm, k8s or local");
                continue;
            }
            if (!m_w.known_key(key, path, k_resource_keys)) {
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
                if (auto pin = m_w.parsed<InfraPin>(value, field, parse_infra)) {
                    r.infra = *pin;
                }
            } else if (k == "accelerators") {
                accelerators(value, field, r);
            } else if (k == "cpus") {
                r.cpus = m_w.parsed<Quantity>(value, field, parse_cpus);
            } else if (k == "memory") {
                r.memory_gb = m_w.parsed<Quantity>(value, field, parse_memory_gb);
            } else if (k == "disk_size") {
                r.disk_size_gb = m_w.parsed<double>(value, field, parse_disk_gb);
            } else if (k == "image_id") {
                if (value.IsMap()) {
                    m_w.error(value, field, "per-region image ids are cloud-only; give one image");
                } else {
                    r.image_id = m_w.scalar(value, field);
                }
            } else if (k == "ports") {
                ports(value, field, r);
            } else if (k == "labels") {
                labels(value, field, r);
            } else if (k == "use_spot") {
                r.use_spot = m_w.boolean(value, field);
            } else if (k == "cloud") {
                cloud = m_w.scalar(value, field);
                cloud_node = value;
            } else if (k == "region") {
                region = m_w.scalar(value, field);
                region_node = value;
            }
        }
        legacy_cloud(r, path, cloud, region, cloud_node, region_node);
        return r;
    }

    // Older SkyPilot files say `cloud: kubernetes` (+ `region: CONTEXT`) where newer ones say `infra`.
    void legacy_cloud(Resources& r, const std::string& path, const std::optional<std::string>& cloud,
                      const std::optional<std::string>& region, const YAML::Node& cloud_node,
                      const YAML::Node& region_node) {
        if (!cloud) {
            if (region) {
                m_w.error(region_node, path + ".region",
                          "is cloud-only; use infra: k8s/CONTEXT or slurm/CLUSTER");
            }
            return;
        }
        std::string text = *cloud + (region ? "/" + *region : "");
        auto pin = parse_infra(text);
        if (!pin) {
            m_w.error(cloud_node, path + ".cloud",
                      fmt::format("cloud '{}' is not supported; use infra: k8s, slurm or local", *cloud));
            return;
        }
        if (r.infra) {
            m_w.error(cloud_node, path + ".cloud", "cannot be combined with infra; use infra");
            return;
        }
        r.infra = *pin;
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
        if (key.Scalar().find(':') != std::string::npos) {
            m_w.error(key, path, "write {NAME: COUNT}, not {NAME:COUNT: ...}");
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
