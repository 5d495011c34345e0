#include "core/task_group.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/quantity.hpp"
#include "core/skypilot_keys.hpp"
#include "core/spec_parse_detail.hpp"
#include "core/yaml_walker.hpp"

namespace tandem {

namespace {

using detail::YamlWalker;

const std::vector<std::string_view> k_header_keys{"name", "execution", "primary_tasks", "termination_delay"};

bool valid_member_name(std::string_view name) {
    return !name.empty() && name.size() <= 63 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '_';
    });
}

// A first document that is a header rather than a task. SkyPilot takes `{name}` or `{name, execution}` as
// a pipeline's header and a first document with `execution: parallel` as a job group's; tandem also takes
// any first document with a header-only key (execution, primary_tasks, termination_delay) and no task key,
// so a misspelt execution or a group key in a pipeline gets its own precise error.
bool is_header(const YAML::Node& doc) {
    if (!doc.IsMap()) {
        return false;
    }
    bool header_only = false;
    bool has_name = false;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        if (!it->first.IsScalar()) {
            return false;
        }
        const std::string& key = it->first.Scalar();
        if (key == "name") {
            has_name = true;
        } else if (key == "execution" || key == "primary_tasks" || key == "termination_delay") {
            header_only = true;
        } else if (find_sky_key("", key) != nullptr) {
            return false; // a task key: this document is a task
        }
    }
    return header_only || (has_name && doc.size() == 1);
}

class GroupLoader {
public:
    GroupLoader(const std::string& file, std::vector<Diagnostic>& diags) : m_w(file, diags) {}

    void header(const YAML::Node& doc, TaskGroup& group) {
        for (const auto& [key, value] : m_w.entries(doc, "")) {
            const std::string& k = key.Scalar();
            if (std::find(k_header_keys.begin(), k_header_keys.end(), k) == k_header_keys.end()) {
                // SkyPilot logs a warning and goes on; `plan` lists it.
                group.notes.push_back(
                    SpecNote{k, m_w.loc(key), "not a job group header field; SkyPilot ignores it"});
                continue;
            }
            if (k == "name") {
                if (auto v = m_w.scalar(value, k)) {
                    valid_member_name(*v) ? void(group.name = *v)
                                          : m_w.error(value, k, "must be letters, digits, '-' and '_' only");
                }
            } else if (k == "execution") {
                if (auto v = m_w.scalar(value, k)) {
                    if (*v == "parallel") {
                        group.kind = GroupKind::parallel;
                    } else if (*v != "serial") {
                        m_w.error(value, k,
                                  fmt::format("'{}' is neither parallel (a job group) nor serial "
                                              "(a pipeline)",
                                              *v));
                    }
                }
            } else if (k == "primary_tasks") {
                primary_tasks(value, group);
                m_primary_node = value;
                m_has_primary = true;
            } else if (k == "termination_delay") {
                termination_delay(value, group);
                m_delay_node = value;
                m_has_delay = true;
            }
        }
        if (group.kind == GroupKind::pipeline && (m_has_primary || m_has_delay)) {
            m_w.error(m_has_primary ? m_primary_node : m_delay_node,
                      m_has_primary ? "primary_tasks" : "termination_delay",
                      "applies to a job group (execution: parallel), not to a pipeline");
        }
    }

    // After the members are known: the names the header refers to must exist.
    void check_references(const TaskGroup& group) {
        std::set<std::string> names;
        for (const auto& m : group.members) {
            names.insert(m.name);
        }
        for (const auto& p : group.primary) {
            if (!names.count(p)) {
                m_w.error(m_primary_node, "primary_tasks", fmt::format("'{}' is not a task of the group", p));
            }
        }
        for (const auto& [member, seconds] : group.termination_delay) {
            if (!member.empty() && !names.count(member)) {
                m_w.error(m_delay_node, "termination_delay." + member, "is not a task of the group");
            }
        }
    }

    YamlWalker& walker() { return m_w; }

private:
    void primary_tasks(const YAML::Node& value, TaskGroup& group) {
        if (value.IsNull()) {
            return;
        }
        if (!value.IsSequence()) {
            m_w.error(value, "primary_tasks", "must be a list of task names");
            return;
        }
        for (std::size_t i = 0; i < value.size(); ++i) {
            if (auto v = m_w.scalar(value[i], fmt::format("primary_tasks[{}]", i))) {
                group.primary.push_back(*v);
            }
        }
    }

    void duration(const YAML::Node& value, const std::string& field, const std::string& member,
                  TaskGroup& group) {
        if (auto v = m_w.scalar(value, field)) {
            auto seconds = parse_duration_seconds(*v);
            seconds ? void(group.termination_delay[member] = *seconds)
                    : m_w.error(value, field, seconds.error());
        }
    }

    // A duration for every member, or {default: D, member: D, ...}.
    void termination_delay(const YAML::Node& value, TaskGroup& group) {
        if (!value.IsMap()) {
            duration(value, "termination_delay", "", group);
            return;
        }
        for (const auto& [key, v] : m_w.entries(value, "termination_delay")) {
            const std::string& name = key.Scalar();
            duration(v, "termination_delay." + name, name == "default" ? "" : name, group);
        }
    }

    YamlWalker m_w;
    YAML::Node m_primary_node, m_delay_node;
    bool m_has_primary = false, m_has_delay = false;
};

std::string default_name(const std::string& file) {
    auto stem = std::filesystem::path(file).stem().string();
    return valid_member_name(stem) ? stem : "group";
}

} // namespace

bool is_primary_member(const std::vector<std::string>& primary, const std::string& member) {
    return primary.empty() || std::find(primary.begin(), primary.end(), member) != primary.end();
}

std::int64_t termination_delay_for(const std::map<std::string, std::int64_t>& delays,
                                   const std::string& member) {
    if (auto it = delays.find(member); it != delays.end()) {
        return it->second;
    }
    auto d = delays.find("");
    return d == delays.end() ? 0 : d->second;
}

bool TaskGroup::is_primary(const std::string& member) const {
    return is_primary_member(primary, member);
}

std::int64_t TaskGroup::termination_delay_of(const std::string& member) const {
    return termination_delay_for(termination_delay, member);
}

std::string_view to_string(GroupKind kind) {
    return kind == GroupKind::parallel ? "parallel" : "serial";
}

TaskFileLoad load_task_text(std::string_view text, const std::string& file_name,
                            const SpecOverrides& overrides, const LoadOptions& options) {
    TaskFileLoad out;
    auto& diags = out.diagnostics;
    auto docs = detail::load_documents(text, file_name, diags);
    if (!docs) {
        return out;
    }
    if (docs->size() <= 1) {
        auto single = load_spec(text, file_name, overrides, options);
        out.task = std::move(single.spec);
        out.diagnostics = std::move(single.diagnostics);
        return out;
    }
    TaskGroup group;
    group.source_file = file_name;
    group.name = default_name(file_name);
    GroupLoader loader(file_name, diags);
    std::size_t first = 0;
    if (is_header((*docs)[0])) {
        loader.header((*docs)[0], group);
        first = 1;
    }
    if (overrides.name) {
        group.name = *overrides.name;
    }
    SpecOverrides member_overrides = overrides;
    member_overrides.name.reset(); // -n names the group
    std::set<std::string> seen;
    for (std::size_t i = first; i < docs->size(); ++i) {
        const YAML::Node& doc = (*docs)[i];
        if (doc.IsNull()) {
            loader.walker().error(doc, "", fmt::format("document {} of the file is empty", i + 1));
            continue;
        }
        const bool named = doc.IsMap() && doc["name"];
        auto member = detail::load_spec_root(doc, file_name, member_overrides, options);
        diags.insert(diags.end(), member.diagnostics.begin(), member.diagnostics.end());
        if (!member.spec) {
            continue;
        }
        TaskSpec spec = std::move(*member.spec);
        if (spec.sweep) {
            // Each member is one job with one set of addresses; a member of many elements has no one host.
            diags.push_back(
                Diagnostic{spec.location_of("sweep"), "sweep",
                           "a task of a pipeline or job group cannot be a sweep; launch the sweep "
                           "on its own"});
            continue;
        }
        if (!named) {
            if (group.kind == GroupKind::parallel) {
                loader.walker().error(doc, "name", "every task of a job group needs a name");
                continue;
            }
            spec.name = fmt::format("{}-{}", group.name, group.members.size() + 1);
        } else if (!valid_member_name(spec.name)) {
            diags.push_back(Diagnostic{spec.location_of("name"), "name",
                                       "a task of a pipeline or job group is named with letters, digits, '-' "
                                       "and '_' only"});
            continue;
        }
        if (!seen.insert(spec.name).second) {
            diags.push_back(Diagnostic{spec.location_of("name"), "name",
                                       fmt::format("'{}' names two tasks of the group", spec.name)});
            continue;
        }
        group.members.push_back(std::move(spec));
    }
    if (group.members.empty() && diags.empty()) {
        diags.push_back(Diagnostic{SourceLoc{file_name, 1, 1}, "", "the file has a header but no task"});
    }
    loader.check_references(group);
    if (diags.empty()) {
        out.group = std::move(group);
    }
    return out;
}

TaskFileLoad load_task_file(const std::string& path, const SpecOverrides& overrides,
                            const LoadOptions& options) {
    TaskFileLoad out;
    auto text = read_task_text(path, options, out.diagnostics);
    return text ? load_task_text(*text, path, overrides, options) : out;
}

} // namespace tandem
