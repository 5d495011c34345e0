#pragma once
// Internal to the spec loader: a helper for walking a yaml-cpp tree that turns each problem into a
// Diagnostic (file:line:col, dotted field path) and lets the walk go on, so the user sees all of them at
// once. yaml-cpp exceptions are not caught here; load_spec catches them at its boundary.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>
#include <yaml-cpp/yaml.h>

#include "core/spec_loader.hpp"

namespace tandem::detail {

// "resources" + "cpus" -> "resources.cpus"; an empty prefix is the top level.
std::string join_path(const std::string& prefix, std::string_view key);

class YamlWalker {
public:
    YamlWalker(std::string file, std::vector<Diagnostic>& diagnostics);

    SourceLoc loc(const YAML::Node& node) const;
    SourceLoc loc(const YAML::Mark& mark) const;

    void error(const YAML::Node& node, const std::string& path, std::string message);
    void error_at(const SourceLoc& where, const std::string& path, std::string message);

    // The entries of a mapping, with duplicate keys and non-scalar keys reported.
    std::vector<std::pair<YAML::Node, YAML::Node>> entries(const YAML::Node& map, const std::string& path);

    // Reports an unknown key with "did you mean" and returns false.
    bool known_key(const YAML::Node& key, const std::string& path,
                   const std::vector<std::string_view>& known);

    // Looks `key` up in SkyPilot's key table (skypilot_keys.hpp) under `section`: true when the caller
    // reads it. Otherwise it is dealt with here and false comes back: a refused key is an error, an
    // ignored one a note for `plan`, an internal one nothing, an unknown one "unknown field" with
    // "did you mean". `path` is where the key sits ("resources.any_of[1]").
    bool admit(const YAML::Node& key, std::string_view section, const std::string& path,
               std::vector<SpecNote>& notes);

    std::optional<std::string> scalar(const YAML::Node& node, const std::string& path,
                                      bool allow_null = false);

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

    std::optional<bool> boolean(const YAML::Node& node, const std::string& path);

    static std::string kind_name(const YAML::Node& node);

    // YAML -> JSON for free-form sections, bounded in size and depth.
    std::optional<nlohmann::json> to_json(const YAML::Node& node, const std::string& path);

private:
    std::optional<nlohmann::json> to_json_rec(const YAML::Node& node, const std::string& path, int depth,
                                              std::size_t& budget);

    std::string m_file;
    std::vector<Diagnostic>& m_diags;
};

} // namespace tandem::detail
