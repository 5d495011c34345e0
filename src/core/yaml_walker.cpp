#include "core/yaml_walker.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/skypilot_keys.hpp"

namespace tandem::detail {

namespace {

constexpr std::size_t k_max_json_nodes = 20000; // pod_config / file_mounts: guards against alias bombs
constexpr int k_max_json_depth = 64;

// Plain scalars keep YAML's types (numbers, booleans) so a pod_config reaches the API as written.
nlohmann::json scalar_json(const YAML::Node& node) {
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

} // namespace

std::string join_path(const std::string& prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

YamlWalker::YamlWalker(std::string file, std::vector<Diagnostic>& diagnostics)
    : m_file(std::move(file)), m_diags(diagnostics) {}

SourceLoc YamlWalker::loc(const YAML::Node& node) const {
    return loc(node.Mark());
}

SourceLoc YamlWalker::loc(const YAML::Mark& mark) const {
    if (mark.line < 0) {
        return SourceLoc{m_file, 1, 1};
    }
    return SourceLoc{m_file, mark.line + 1, mark.column + 1};
}

void YamlWalker::error(const YAML::Node& node, const std::string& path, std::string message) {
    m_diags.push_back(Diagnostic{loc(node), path, std::move(message)});
}

void YamlWalker::error_at(const SourceLoc& where, const std::string& path, std::string message) {
    m_diags.push_back(Diagnostic{where, path, std::move(message)});
}

std::vector<std::pair<YAML::Node, YAML::Node>> YamlWalker::entries(const YAML::Node& map,
                                                                   const std::string& path) {
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

bool YamlWalker::known_key(const YAML::Node& key, const std::string& path,
                           const std::vector<std::string_view>& known) {
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

bool YamlWalker::admit(const YAML::Node& key, std::string_view section, const std::string& path,
                       std::vector<SpecNote>& notes) {
    const std::string& name = key.Scalar();
    const SkyKey* row = find_sky_key(section, name);
    if (row == nullptr) {
        return known_key(key, path, sky_keys_of(section));
    }
    switch (row->use) {
    case KeyUse::handled:
        return true;
    case KeyUse::ignored:
        notes.push_back(SpecNote{join_path(path, name), loc(key), std::string(row->note)});
        return false;
    case KeyUse::internal:
        return false;
    case KeyUse::cloud_only:
    case KeyUse::not_yet:
    case KeyUse::global_only:
        break;
    }
    error(key, join_path(path, name), refusal_message(*row));
    return false;
}

std::optional<std::string> YamlWalker::scalar(const YAML::Node& node, const std::string& path,
                                              bool allow_null) {
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

std::optional<bool> YamlWalker::boolean(const YAML::Node& node, const std::string& path) {
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

std::string YamlWalker::kind_name(const YAML::Node& node) {
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

std::optional<nlohmann::json> YamlWalker::to_json(const YAML::Node& node, const std::string& path) {
    std::size_t budget = k_max_json_nodes;
    const std::size_t errors_before = m_diags.size();
    auto j = to_json_rec(node, path, 0, budget);
    if (!j && m_diags.size() > errors_before) {
        return std::nullopt; // already reported (too deep, a non-string key)
    }
    if (budget == 0) {
        error(node, path,
              fmt::format("is too large (over {} values once aliases are expanded)", k_max_json_nodes));
        return std::nullopt;
    }
    return j;
}

std::optional<nlohmann::json> YamlWalker::to_json_rec(const YAML::Node& node, const std::string& path,
                                                      int depth, std::size_t& budget) {
    if (budget == 0) {
        return std::nullopt;
    }
    --budget;
    if (depth > k_max_json_depth) {
        error(node, path, fmt::format("is nested deeper than {} levels", k_max_json_depth));
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

} // namespace tandem::detail
