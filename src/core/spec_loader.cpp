// The YAML walk of a SkyPilot-compatible task file. yaml-cpp exceptions stop at this file's boundary;
// every problem becomes a Diagnostic and the walk goes on, so the user sees all of them at once.

#include "core/spec_loader.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/quantity.hpp"
#include "core/spec_parse_detail.hpp"

namespace tandem {

namespace {

using detail::ParsedSpec;
using detail::PendingValues;

constexpr std::size_t k_max_json_nodes = 20000; // pod_config / file_mounts: guards against alias bombs
constexpr int k_max_json_depth = 64;

const std::vector<std::string_view> k_top_keys{"name",    "workdir",     "num_nodes", "resources", "envs",
                                               "secrets", "file_mounts", "setup",     "run",       "config"};
const std::vector<std::string_view> k_resource_keys{"infra",    "accelerators", "cpus",     "memory",
                                                    "disk_size", "image_id",    "ports",    "labels",
                                                    "use_spot",  "any_of",      "ordered",  "cloud",
                                                    "region"};
// SkyPilot fields that only make sense for cloud VMs: known, so they get a precise message.
const std::vector<std::string_view> k_cloud_only_keys{"zone",         "instance_type", "disk_tier",
                                                      "network_tier", "job_recovery",  "spot_recovery",
                                                      "accelerator_args", "autostop",  "priority"};
const std::vector<std::string_view> k_config_keys{"slurm", "kubernetes"};
const std::vector<std::string_view> k_slurm_keys{"partition", "account", "qos", "constraint", "time"};
const std::vector<std::string_view> k_k8s_keys{"namespace", "pod_config", "queue"};

std::string join_path(const std::string& prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

class Walker {
public:
    Walker(std::string file, std::vector<Diagnostic>& diagnostics)
        : m_file(std::move(file)), m_diags(diagnostics) {}

    SourceLoc loc(const YAML::Node& node) const { return loc(node.Mark()); }
    SourceLoc loc(const YAML::Mark& mark) const {
        if (mark.line < 0) {
            return SourceLoc{m_file, 1, 1};
        }
        return SourceLoc{m_file, mark.line + 1, mark.column + 1};
    }

    void error(const YAML::Node& node, const std::string& path, std::string message) {
        m_diags.push_back(Diagnostic{loc(node), path, std::move(message)});
    }

    // The entries of a mapping, with duplicate keys and non-scalar keys reported.
    std::vector<std::pair<YAML::Node, YAML::Node>> entries(const YAML::Node& map, const std::string& path) {
        std::vector<std::pair<YAML::Node, YAML::Node>> out;
        std::set<std::string> seen;
        for (auto it = map.begin(); it != map.end(); ++it) {
            if (!it->first.IsScalar()) {
                error(it->first, path, "keys must be plain strings");
                continue;
            }
            if (!seen.insert(it->first.Scalar()).second) {
                error(it->first, join_path(path, it->first.Scalar()), "duplicate key");
                continue;
            }
            out.emplace_back(it->first, it->second);
        }
        return out;
    }

    // Reports an unknown key with "did you mean" and returns false.
    bool known_key(const YAML::Node& key, const std::string& path, const std::vector<std::string_view>& known) {
        const std::string& name = key.Scalar();
        if (std::find(known.begin(), known.end(), name) != known.end()) {
            return true;
        }
        std::string message = "unknown field";
        if (auto near = closest_match(name, known)) {
            message += fmt::format(" (did you mean '{}'?)", *near);
        }
        error(key, join_path(path, name), message);
        return false;
    }

    std::optional<std::string> scalar(const YAML::Node& node, const std::string& path, bool allow_null = false) {
        if (node.IsNull()) {
            if (!allow_null) {
                error(node, path, "must not be empty");
            }
            return std::nullopt;
        }
        if (!node.IsScalar()) {
            error(node, path, fmt::format("must be a single value, not a {}", kind_name(node)));
            return std::nullopt;
        }
        return node.Scalar();
    }

    template <typename T>
    std::optional<T> parsed(const YAML::Node& node, const std::string& path,
                            tl::expected<T, std::string> (*parse)(std::string_view)) {
        auto text = scalar(node, path);
        if (!text) {
            return std::nullopt;
        }
        auto value = parse(*text);
        if (!value) {
            error(node, path, value.error());
            return std::nullopt;
        }
        return *value;
    }

    std::optional<bool> boolean(const YAML::Node& node, const std::string& path) {
        auto text = scalar(node, path);
        if (!text) {
            return std::nullopt;
        }
        static const std::set<std::string> yes{"true", "True", "TRUE", "yes", "Yes", "on"};
        static const std::set<std::string> no{"false", "False", "FALSE", "no", "No", "off"};
        if (yes.count(*text) != 0U) {
            return true;
        }
        if (no.count(*text) != 0U) {
            return false;
        }
        error(node, path, fmt::format("'{}' is not true or false", *text));
        return std::nullopt;
    }

    static std::string kind_name(const YAML::Node& node) {
        if (node.IsMap()) {
            return "mapping";
        }
        if (node.IsSequence()) {
            return "list";
        }
        if (node.IsNull()) {
            return "null";
        }
        return "value";
    }

    // YAML -> JSON for free-form sections, bounded in size and depth.
    std::optional<nlohmann::json> to_json(const YAML::Node& node, const std::string& path) {
        std::size_t budget = k_max_json_nodes;
        auto j = to_json_rec(node, path, 0, budget);
        if (budget == 0) {
            error(node, path, fmt::format("is too large (over {} values once aliases are expanded)", k_max_json_nodes));
            return std::nullopt;
        }
        return j;
    }

private:
    std::optional<nlohmann::json> to_json_rec(const YAML::Node& node, const std::string& path, int depth,
                                              std::size_t& budget) {
        if (budget == 0) {
            return std::nullopt;
        }
        --budget;
        if (depth > k_max_json_depth) {
            error(node, path, fmt::format("is nested deeper than {} levels", k_max_json_depth));
            budget = 0;
            return std::nullopt;
        }
        if (node.IsNull()) {
            return nlohmann::json(nullptr);
        }
        if (node.IsScalar()) {
            return scalar_json(node);
        }
        if (node.IsSequence()) {
            auto arr = nlohmann::json::array();
            for (const auto& item : node) {
                auto v = to_json_rec(item, path, depth + 1, budget);
                if (!v) {
                    return std::nullopt;
                }
                arr.push_back(std::move(*v));
            }
            return arr;
        }
        auto obj = nlohmann::json::object();
        for (auto it = node.begin(); it != node.end(); ++it) {
            if (!it->first.IsScalar()) {
                error(it->first, path, "keys must be plain strings");
                return std::nullopt;
            }
            auto v = to_json_rec(it->second, path, depth + 1, budget);
            if (!v) {
                return std::nullopt;
            }
            obj[it->first.Scalar()] = std::move(*v);
        }
        return obj;
    }

    // Plain scalars keep YAML's types (numbers, booleans) so a pod_config reaches the API as written.
    static nlohmann::json scalar_json(const YAML::Node& node) {
        const std::string& text = node.Scalar();
        if (node.Tag() == "!") { // quoted: always a string
            return text;
        }
        if (text == "true" || text == "false") {
            return text == "true";
        }
        long long i = 0;
        if (YAML::convert<long long>::decode(node, i)) {
            return i;
        }
        double d = 0;
        if (YAML::convert<double>::decode(node, d) && text.find_first_of("0123456789") != std::string::npos) {
            return d;
        }
        return text;
    }

    std::string m_file;
    std::vector<Diagnostic>& m_diags;
};

class SpecWalker {
public:
    SpecWalker(Walker& w, ParsedSpec& out) : m_w(w), m_out(out), m_spec(out.spec) {}

    void top(const YAML::Node& root) {
        for (const auto& [key, value] : m_w.entries(root, "")) {
            const std::string& k = key.Scalar();
            if (k == "service" || k == "event_callback" || k == "inputs" || k == "outputs" || k == "volumes" ||
                k == "experimental") {
                m_w.error(key, k, "is a SkyPilot feature tandem does not support");
                continue;
            }
            if (!m_w.known_key(key, "", k_top_keys)) {
                continue;
            }
            m_spec.locations[k] = m_w.loc(key);
            if (k == "name") {
                if (auto v = m_w.scalar(value, k)) {
                    m_spec.name = *v;
                }
            } else if (k == "workdir") {
                if (value.IsMap()) {
                    m_w.error(value, k, "a git workdir (url/ref) is not supported yet; give a local directory");
                } else if (auto v = m_w.scalar(value, k)) {
                    m_spec.workdir = *v;
                }
            } else if (k == "num_nodes") {
                if (auto v = m_w.parsed<int>(value, k, parse_positive_int)) {
                    m_spec.num_nodes = *v;
                }
            } else if (k == "resources") {
                resources_section(value);
            } else if (k == "envs") {
                pending_values(value, k, m_out.envs);
            } else if (k == "secrets") {
                pending_values(value, k, m_out.secrets);
            } else if (k == "file_mounts") {
                file_mounts(value);
            } else if (k == "setup" || k == "run") {
                if (auto v = m_w.scalar(value, k, true)) {
                    (k == "setup" ? m_spec.setup : m_spec.run) = *v;
                }
            } else if (k == "config") {
                config_section(value);
            }
        }
    }

private:
    void resources_section(const YAML::Node& node) {
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
                m_w.error(region_node, path + ".region", "is cloud-only; use infra: k8s/CONTEXT or slurm/CLUSTER");
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

    void accelerator_entry(const YAML::Node& key, const YAML::Node& value, const std::string& path, Resources& r) {
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

    void pending_values(const YAML::Node& node, const std::string& path, PendingValues& out) {
        if (node.IsNull()) {
            return;
        }
        if (!node.IsMap()) {
            m_w.error(node, path, "must be a mapping of NAME: value");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, path)) {
            const std::string field = join_path(path, key.Scalar());
            if (!detail::valid_env_name(key.Scalar())) {
                m_w.error(key, field, "is not a valid variable name (letters, digits and _, not starting with a digit)");
                continue;
            }
            std::optional<std::string> v;
            if (!value.IsNull()) {
                v = m_w.scalar(value, field);
                if (!v) {
                    continue;
                }
            }
            out.entries.emplace_back(key.Scalar(), v);
            out.locs.push_back(m_w.loc(key));
            m_spec.locations[field] = m_w.loc(key);
        }
    }

    void file_mounts(const YAML::Node& node) {
        if (node.IsNull()) {
            return;
        }
        if (!node.IsMap()) {
            m_w.error(node, "file_mounts", "must be a mapping of remote path to source");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, "file_mounts")) {
            const std::string field = "file_mounts." + key.Scalar();
            if (auto j = m_w.to_json(value, field)) {
                m_spec.file_mounts[key.Scalar()] = std::move(*j);
                m_spec.locations[field] = m_w.loc(key);
            }
        }
    }

    void config_section(const YAML::Node& node) {
        if (node.IsNull()) {
            return;
        }
        if (!node.IsMap()) {
            m_w.error(node, "config", "must be a mapping");
            return;
        }
        for (const auto& [key, value] : m_w.entries(node, "config")) {
            if (!m_w.known_key(key, "config", k_config_keys)) {
                continue;
            }
            const std::string path = "config." + key.Scalar();
            if (value.IsNull()) {
                continue;
            }
            if (!value.IsMap()) {
                m_w.error(value, path, "must be a mapping");
                continue;
            }
            key.Scalar() == "slurm" ? slurm_section(value, path) : k8s_section(value, path);
        }
    }

    void slurm_section(const YAML::Node& node, const std::string& path) {
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.known_key(key, path, k_slurm_keys)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            m_spec.locations[field] = m_w.loc(key);
            auto v = m_w.scalar(value, field);
            if (!v) {
                continue;
            }
            if (k == "partition") {
                m_spec.slurm.partition = v;
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
        }
    }

    void k8s_section(const YAML::Node& node, const std::string& path) {
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.known_key(key, path, k_k8s_keys)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            m_spec.locations[field] = m_w.loc(key);
            if (k == "pod_config") {
                if (!value.IsMap()) {
                    m_w.error(value, field, "must be a mapping (a partial Pod manifest)");
                } else if (auto j = m_w.to_json(value, field)) {
                    m_spec.kubernetes.pod_config = std::move(*j);
                }
            } else if (auto v = m_w.scalar(value, field)) {
                (k == "namespace" ? m_spec.kubernetes.namespace_name : m_spec.kubernetes.queue) = v;
            }
        }
    }

    Walker& m_w;
    ParsedSpec& m_out;
    TaskSpec& m_spec;
};

std::string default_name(const std::string& file) {
    auto stem = std::filesystem::path(file).stem().string();
    return stem.empty() ? "task" : stem;
}

// Checks that need the whole spec: presence of run/setup, name shape, workdir on disk.
void final_checks(TaskSpec& spec, const LoadOptions& options, std::vector<Diagnostic>& diags) {
    if (spec.run.empty() && spec.setup.empty()) {
        diags.push_back(Diagnostic{spec.location_of("run"), "run", "the task needs `run` or `setup` (both are empty)"});
    }
    if (spec.name.empty()) {
        spec.name = default_name(spec.source_file);
    }
    if (spec.name.size() > 128 ||
        std::any_of(spec.name.begin(), spec.name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
        diags.push_back(Diagnostic{spec.location_of("name"), "name",
                                   "must be at most 128 characters with no control characters"});
    }
    if (spec.workdir) {
        std::filesystem::path p(*spec.workdir);
        if (p.is_relative()) {
            p = std::filesystem::path(options.base_dir) / p;
        }
        std::error_code ec;
        p = std::filesystem::weakly_canonical(p, ec);
        if (ec || !std::filesystem::is_directory(p, ec)) {
            diags.push_back(Diagnostic{spec.location_of("workdir"), "workdir",
                                       fmt::format("'{}' is not a directory", *spec.workdir)});
        } else {
            spec.workdir = p.string();
        }
    }
}

} // namespace

std::string format_diagnostic(const Diagnostic& d) {
    std::string where = d.loc.line > 0 ? fmt::format("{}:{}:{}", d.loc.file, d.loc.line, d.loc.column) : d.loc.file;
    return d.path.empty() ? fmt::format("{}: {}", where, d.message)
                          : fmt::format("{}: {}: {}", where, d.path, d.message);
}

std::string format_diagnostics(const std::vector<Diagnostic>& ds) {
    std::string out;
    for (const auto& d : ds) {
        if (!out.empty()) {
            out += '\n';
        }
        out += format_diagnostic(d);
    }
    return out;
}

SpecLoad load_spec(std::string_view text, const std::string& file_name, const SpecOverrides& overrides,
                   const LoadOptions& options) {
    SpecLoad result;
    auto& diags = result.diagnostics;
    Walker walker(file_name, diags);
    std::vector<YAML::Node> docs;
    try {
        docs = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& e) {
        // yaml-cpp marks are 0-based; its DeepRecursion guard also lands here.
        diags.push_back(Diagnostic{walker.loc(e.mark), "", "invalid YAML: " + e.msg});
        return result;
    }
    if (docs.size() > 1) {
        diags.push_back(Diagnostic{walker.loc(docs[1]), "",
                                   "the file holds several YAML documents (---); tandem takes one task per file "
                                   "for now"});
        return result;
    }
    if (docs.empty() || docs[0].IsNull()) {
        diags.push_back(Diagnostic{SourceLoc{file_name, 1, 1}, "", "the task file is empty"});
        return result;
    }
    const YAML::Node& root = docs[0];
    if (!root.IsMap()) {
        diags.push_back(Diagnostic{walker.loc(root), "", "a task must be a mapping (name:, resources:, run: ...)"});
        return result;
    }
    ParsedSpec parsed;
    parsed.spec.source_file = file_name;
    try {
        SpecWalker(walker, parsed).top(root);
    } catch (const YAML::Exception& e) {
        diags.push_back(Diagnostic{walker.loc(e.mark), "", "invalid YAML: " + e.msg});
        return result;
    }
    detail::apply_overrides(parsed, overrides, options, diags);
    detail::resolve_pending(parsed, diags);
    final_checks(parsed.spec, options, diags);
    if (diags.empty()) {
        result.spec = std::move(parsed.spec);
    }
    return result;
}

SpecLoad load_spec_file(const std::string& path, const SpecOverrides& overrides, const LoadOptions& options) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    if (!in || std::filesystem::is_directory(path, ec)) {
        SpecLoad result;
        result.diagnostics.push_back(Diagnostic{SourceLoc{path, 0, 0}, "", "cannot read the task file"});
        return result;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return load_spec(text.str(), path, overrides, options);
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string_view>& candidates) {
    auto distance = [](std::string_view a, std::string_view b) {
        std::vector<std::size_t> prev(b.size() + 1);
        std::vector<std::size_t> cur(b.size() + 1);
        for (std::size_t j = 0; j <= b.size(); ++j) {
            prev[j] = j;
        }
        for (std::size_t i = 1; i <= a.size(); ++i) {
            cur[0] = i;
            for (std::size_t j = 1; j <= b.size(); ++j) {
                std::size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
                cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
            }
            std::swap(prev, cur);
        }
        return prev[b.size()];
    };
    std::optional<std::string> best;
    std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (auto c : candidates) {
        auto d = distance(word, c);
        if (d < best_distance) {
            best_distance = d;
            best = std::string(c);
        }
    }
    return best;
}

} // namespace tandem
