// One kubeconfig file's entries, read with yaml-cpp (a kubeconfig is YAML or JSON): the file's shape and
// its lists; the bodies of the entries are read by kubeconfig_entry_bodies.cpp.

#include <algorithm>
#include <set>

#include "backends/k8s/kubeconfig_reader.hpp"
#include "core/yaml_load.hpp"

namespace tandem::k8s::detail {

void read_context(EntryReader& r, YAML::Node body, ContextEntry& c) {
    static const std::vector<std::string_view> known{"cluster", "user", "namespace", "extensions"};
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        const YAML::Node v = it->second; // a copy: `it->` yields a temporary
        if (key == "cluster") {
            c.cluster = r.string(v, key).value_or("");
        } else if (key == "user") {
            c.user = r.string(v, key).value_or("");
        } else if (key == "namespace") {
            c.namespace_name = r.string(v, key).value_or("");
        } else if (key != "extensions") {
            r.unknown(it->first, key, known);
        }
    }
}

// clusters / users / contexts: a list of {name, <body_key>: {...}}. Shape problems are fatal diagnostics.

namespace {

namespace fs = std::filesystem;

template <typename Entry, typename ReadBody>
void read_list(const FileInfo& file, const YAML::Node& root, const std::string& list_key,
               const char* body_key, std::vector<Entry>& out, std::vector<Diagnostic>& diags,
               ReadBody read_body) {
    const YAML::Node list = root[list_key];
    if (!list || list.IsNull()) {
        return;
    }
    if (!list.IsSequence()) {
        diags.push_back({loc_of(file.path, list.Mark()), list_key, "must be a list"});
        return;
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node item = list[i];
        const std::string field = fmt::format("{}[{}]", list_key, i);
        if (!item.IsMap()) {
            diags.push_back({loc_of(file.path, item.Mark()), field,
                             fmt::format("must be a mapping with name and {}", body_key)});
            continue;
        }
        const YAML::Node name = item["name"];
        if (!name || !name.IsScalar() || name.Scalar().empty()) {
            diags.push_back({loc_of(file.path, item.Mark()), field + ".name", "is required"});
            continue;
        }
        if (!names.insert(name.Scalar()).second) {
            diags.push_back({loc_of(file.path, name.Mark()), field + ".name",
                             fmt::format("duplicate name '{}' in {}", name.Scalar(), list_key)});
            continue;
        }
        Entry entry;
        entry.name = name.Scalar();
        EntryReader reader(file, field + "." + body_key, entry.problem);
        const YAML::Node body = item[body_key];
        if (body && body.IsMap()) {
            read_body(reader, body, entry);
        } else if (body && !body.IsNull()) {
            reader.problem(body, "", "must be a mapping");
        }
        out.push_back(std::move(entry));
    }
}

} // namespace

Result<FileEntries> parse_kubeconfig_file(const std::string& path, const std::string& text) {
    std::error_code ec;
    FileInfo file{path, fs::absolute(path, ec).parent_path()};
    auto loaded = load_yaml_document(text, path);
    if (!loaded) {
        return tl::unexpected(loaded.error());
    }
    const YAML::Node root = *loaded;
    FileEntries entries;
    if (!root || root.IsNull()) {
        return entries;
    }
    if (!root.IsMap()) {
        return fail(ErrorKind::config,
                    format_diagnostic({loc_of(path, root.Mark()), "", "a kubeconfig must be a mapping"}));
    }
    std::vector<Diagnostic> diags;
    static const std::vector<std::string_view> top{"apiVersion", "kind",     "preferences",     "clusters",
                                                   "users",      "contexts", "current-context", "extensions"};
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string key = it->first.as<std::string>("");
        if (std::find(top.begin(), top.end(), key) != top.end()) {
            continue;
        }
        if (auto near = closest_match(key, top)) {
            diags.push_back({loc_of(path, it->first.Mark()), key,
                             fmt::format("unknown field (did you mean '{}'?)", *near)});
        }
    }
    if (const YAML::Node kind = root["kind"]; kind && kind.IsScalar() && kind.Scalar() != "Config") {
        diags.push_back({loc_of(path, kind.Mark()), "kind",
                         fmt::format("'{}' is not a kubeconfig (kind must be Config)", kind.Scalar())});
    }
    read_list(file, root, "clusters", "cluster", entries.clusters, diags, read_cluster);
    read_list(file, root, "users", "user", entries.users, diags, read_user);
    read_list(file, root, "contexts", "context", entries.contexts, diags, read_context);
    if (const YAML::Node cc = root["current-context"]; cc && !cc.IsNull()) {
        if (cc.IsScalar()) {
            entries.current_context = cc.Scalar();
        } else {
            diags.push_back({loc_of(path, cc.Mark()), "current-context", "must be a string"});
        }
    }
    if (!diags.empty()) {
        return fail(ErrorKind::config, format_diagnostics(diags));
    }
    return entries;
}

} // namespace tandem::k8s::detail
