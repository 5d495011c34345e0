#include "core/config.hpp"

#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/backend_traits.hpp"
#include "core/quantity.hpp"
#include "core/spec_loader.hpp"
#include "core/yaml_load.hpp"

namespace tandem {

namespace {

SourceLoc loc_of(const std::string& file, const YAML::Mark& m) {
    return m.line < 0 ? SourceLoc{file, 1, 1} : SourceLoc{file, m.line + 1, m.column + 1};
}

// A cluster setting's values, at most `budget` of them: aliases can make a small file expand to billions
// (an alias bomb), so the caller reports a value that runs the budget out.
constexpr std::size_t k_max_setting_values = 20000;

nlohmann::json to_json(const YAML::Node& node, std::size_t& budget, int depth = 0) {
    if (budget == 0 || depth > 32 || node.IsNull()) {
        return nullptr;
    }
    --budget;
    if (node.IsScalar()) {
        return node.Scalar();
    }
    if (node.IsSequence()) {
        auto arr = nlohmann::json::array();
        for (const auto& item : node) {
            arr.push_back(to_json(item, budget, depth + 1));
        }
        return arr;
    }
    auto obj = nlohmann::json::object();
    for (auto it = node.begin(); it != node.end(); ++it) {
        obj[it->first.as<std::string>("")] = to_json(it->second, budget, depth + 1);
    }
    return obj;
}

// One backend order: a list of distinct kinds ("slurm", "kubernetes"/"k8s", "local"); kinds left out
// keep their default order after the ones named.
std::optional<std::vector<BackendKind>> parse_order(const YAML::Node& node, const std::string& path,
                                                    const std::string& field,
                                                    const std::vector<BackendKind>& fallback,
                                                    std::vector<Diagnostic>& diags) {
    if (!node.IsSequence() || node.size() == 0) {
        diags.push_back(
            {loc_of(path, node.Mark()), field, "must be a list of backends, e.g. [kubernetes, slurm]"});
        return std::nullopt;
    }
    std::vector<BackendKind> order;
    for (const auto& item : node) {
        auto kind = item.IsScalar() ? backend_kind_from_string(item.Scalar()) : std::nullopt;
        if (!kind) {
            diags.push_back({loc_of(path, item.Mark()), field,
                             fmt::format("'{}' is not a backend (use {})",
                                         item.IsScalar() ? item.Scalar() : std::string("?"), backend_type_list())});
            return std::nullopt;
        }
        if (std::find(order.begin(), order.end(), *kind) != order.end()) {
            diags.push_back(
                {loc_of(path, item.Mark()), field, fmt::format("'{}' is listed twice", item.Scalar())});
            return std::nullopt;
        }
        order.push_back(*kind);
    }
    for (auto k : fallback) {
        if (std::find(order.begin(), order.end(), k) == order.end()) {
            order.push_back(k);
        }
    }
    return order;
}

// `planner: {prefer: [..]}` sets all three orders; `prefer: {multi_node, shared, default}` each one.
void parse_planner(const YAML::Node& node, const std::string& path, PlannerPolicy& policy,
                   std::vector<Diagnostic>& diags) {
    if (!node || node.IsNull()) {
        return;
    }
    if (!node.IsMap()) {
        diags.push_back({loc_of(path, node.Mark()), "planner", "must be a mapping with `prefer`"});
        return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
        const auto key = it->first.as<std::string>("");
        if (key != "prefer") {
            diags.push_back(
                {loc_of(path, it->first.Mark()), "planner." + key, "unknown field (known: prefer)"});
        }
    }
    const YAML::Node prefer = node["prefer"];
    if (!prefer || prefer.IsNull()) {
        return;
    }
    if (prefer.IsSequence()) {
        if (auto order = parse_order(prefer, path, "planner.prefer", policy.prefer_default, diags)) {
            policy.prefer_default = policy.prefer_multi_node = policy.prefer_shared = *order;
        }
        return;
    }
    if (!prefer.IsMap()) {
        diags.push_back({loc_of(path, prefer.Mark()), "planner.prefer",
                         "must be a list of backends, or a mapping with multi_node, shared, default"});
        return;
    }
    for (auto it = prefer.begin(); it != prefer.end(); ++it) {
        const auto key = it->first.as<std::string>("");
        const std::string field = "planner.prefer." + key;
        std::vector<BackendKind>* target = key == "multi_node" ? &policy.prefer_multi_node
                                           : key == "shared"   ? &policy.prefer_shared
                                           : key == "default"  ? &policy.prefer_default
                                                               : nullptr;
        if (target == nullptr) {
            diags.push_back({loc_of(path, it->first.Mark()), field,
                             "unknown field (known: multi_node, shared, default)"});
            continue;
        }
        if (auto order = parse_order(it->second, path, field, *target, diags)) {
            *target = *order;
        }
    }
}

Config default_config() {
    Config config;
    config.clusters.push_back(ClusterConfig{"local", BackendKind::local, nlohmann::json::object(), {}});
    return config;
}

} // namespace

Result<Paths> resolve_paths(const GetEnv& getenv) {
    Paths paths;
    if (auto home = getenv("TANDEM_HOME"); home && !home->empty()) {
        paths.config_file = *home + "/config.yaml";
        paths.state_dir = *home + "/state";
        return paths;
    }
    auto user_home = getenv("HOME");
    auto base = [&](const char* xdg, const char* fallback) -> std::optional<std::string> {
        if (auto v = getenv(xdg); v && !v->empty()) {
            return *v;
        }
        if (user_home && !user_home->empty()) {
            return *user_home + "/" + fallback;
        }
        return std::nullopt;
    };
    auto config_base = base("XDG_CONFIG_HOME", ".config");
    auto state_base = base("XDG_STATE_HOME", ".local/state");
    if (!config_base || !state_base) {
        return fail(ErrorKind::config, "cannot tell where to keep state: HOME is not set",
                    "set HOME, XDG_STATE_HOME or TANDEM_HOME");
    }
    paths.config_file = *config_base + "/tandem/config.yaml";
    paths.state_dir = *state_base + "/tandem";
    return paths;
}

Result<Config> parse_config(const std::string& text, const std::string& path) {
    std::vector<Diagnostic> diags;
    auto loaded = load_yaml_document(text, path);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    const YAML::Node root = *loaded;
    Config config;
    config.path = path;
    if (root.IsNull()) {
        return default_config();
    }
    if (!root.IsMap()) {
        return fail(ErrorKind::config,
                    format_diagnostic({loc_of(path, root.Mark()), "", "must be a mapping"}));
    }
    static const std::vector<std::string_view> top_keys{"clusters", "discover_kubeconfig", "planner",
                                                        "pending_timeout"};
    for (auto it = root.begin(); it != root.end(); ++it) {
        const auto key = it->first.as<std::string>("");
        if (std::find(top_keys.begin(), top_keys.end(), key) == top_keys.end()) {
            auto near = closest_match(key, top_keys);
            diags.push_back(
                {loc_of(path, it->first.Mark()), key,
                 near ? fmt::format("unknown field (did you mean '{}'?)", *near) : "unknown field"});
        }
    }
    bool discover = true;
    if (const YAML::Node d = root["discover_kubeconfig"]; d) {
        if (!d.IsScalar() || (d.Scalar() != "true" && d.Scalar() != "false")) {
            diags.push_back({loc_of(path, d.Mark()), "discover_kubeconfig", "must be true or false"});
        } else {
            discover = d.Scalar() == "true";
        }
    }
    parse_planner(root["planner"], path, config.planner, diags);
    if (const YAML::Node t = root["pending_timeout"]; t && !t.IsNull()) {
        auto seconds = t.IsScalar()
                           ? parse_duration_seconds(t.Scalar())
                           : tl::expected<std::int64_t, std::string>(tl::unexpect, "must be a duration");
        seconds ? void(config.pending_timeout_seconds = *seconds)
                : diags.push_back({loc_of(path, t.Mark()), "pending_timeout", seconds.error()});
    }
    const YAML::Node clusters = root["clusters"];
    if (clusters && !clusters.IsNull()) {
        if (!clusters.IsSequence()) {
            diags.push_back({loc_of(path, clusters.Mark()), "clusters", "must be a list"});
        } else {
            std::set<std::string> names;
            for (std::size_t i = 0; i < clusters.size(); ++i) {
                const YAML::Node c = clusters[i];
                const std::string field = fmt::format("clusters[{}]", i);
                if (!c.IsMap()) {
                    diags.push_back({loc_of(path, c.Mark()), field, "must be a mapping with name and type"});
                    continue;
                }
                ClusterConfig cc;
                cc.loc = loc_of(path, c.Mark());
                cc.name = c["name"] && c["name"].IsScalar() ? c["name"].Scalar() : "";
                std::string type = c["type"] && c["type"].IsScalar() ? c["type"].Scalar() : "";
                if (cc.name.empty()) {
                    diags.push_back({cc.loc, field + ".name", "is required"});
                } else if (!names.insert(cc.name).second) {
                    diags.push_back({loc_of(path, c["name"].Mark()), field + ".name",
                                     fmt::format("'{}' is used by another cluster", cc.name)});
                }
                auto kind = backend_kind_from_string(type);
                if (!kind) {
                    diags.push_back(
                        {c["type"] ? loc_of(path, c["type"].Mark()) : cc.loc, field + ".type",
                         fmt::format("'{}' is not a cluster type (use {})", type, backend_type_list())});
                    continue;
                }
                cc.kind = *kind;
                for (auto it = c.begin(); it != c.end(); ++it) {
                    const auto key = it->first.as<std::string>("");
                    if (key == "discover_jobs") {
                        const std::string v = it->second.IsScalar() ? it->second.Scalar() : "";
                        if (v == "true" || v == "false") {
                            cc.discover_jobs = v == "true";
                        } else {
                            diags.push_back({loc_of(path, it->second.Mark()), field + ".discover_jobs",
                                             "must be true or false"});
                        }
                    } else if (key != "name" && key != "type") {
                        std::size_t budget = k_max_setting_values + 1;
                        cc.settings[key] = to_json(it->second, budget);
                        if (budget == 0) {
                            diags.push_back(
                                {loc_of(path, it->second.Mark()), field + "." + key,
                                 fmt::format("is too large (over {} values once aliases are expanded)",
                                             k_max_setting_values)});
                        }
                    }
                }
                config.clusters.push_back(std::move(cc));
            }
        }
    }
    if (!diags.empty()) {
        return fail(ErrorKind::config, format_diagnostics(diags));
    }
    if (config.clusters.empty()) {
        auto d = default_config();
        d.path = path;
        d.discover_kubeconfig = discover;
        d.planner = config.planner;
        d.pending_timeout_seconds = config.pending_timeout_seconds;
        return d;
    }
    config.discover_kubeconfig = discover;
    return config;
}

Result<Config> load_config(const Paths& paths, const FileAccess& files) {
    auto text = files.read ? files.read(paths.config_file, k_max_input_file)
                           : Result<std::optional<std::string>>(std::optional<std::string>());
    if (!text) {
        return fail(ErrorKind::config,
                    fmt::format("cannot read config file {}: {}", paths.config_file, text.error().message));
    }
    if (!*text) {
        return default_config();
    }
    return parse_config(**text, paths.config_file);
}

} // namespace tandem
