// The YAML walk of a SkyPilot-compatible task file. yaml-cpp exceptions stop at this file's boundary;
// every problem becomes a Diagnostic and the walk goes on, so the user sees all of them at once.
// The node-level helpers live in yaml_walker.cpp and the `resources` section in resources_parser.cpp.

#include "core/spec_loader.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "core/quantity.hpp"
#include "core/resources_parser.hpp"
#include "core/value_checks.hpp"
#include "core/spec_parse_detail.hpp"
#include "core/yaml_walker.hpp"

namespace tandem {

namespace {

using detail::join_path;
using detail::ParsedSpec;
using detail::PendingValues;
using detail::YamlWalker;


class SpecWalker {
public:
    SpecWalker(YamlWalker& w, ParsedSpec& out) : m_w(w), m_out(out), m_spec(out.spec) {}

    void top(const YAML::Node& root) {
        for (const auto& [key, value] : m_w.entries(root, "")) {
            const std::string& k = key.Scalar();
            if (!m_w.admit(key, "", "", m_spec.notes)) {
                continue;
            }
            m_spec.locations[k] = m_w.loc(key);
            if (k == "name") {
                if (auto v = m_w.scalar(value, k)) {
                    m_spec.name = *v;
                }
            } else if (k == "workdir") {
                if (value.IsMap()) {
                    git_workdir(value);
                } else if (auto v = m_w.scalar(value, k)) {
                    m_spec.workdir = *v;
                }
            } else if (k == "api_server_access") {
                if (m_w.boolean(value, k).value_or(false)) {
                    m_w.error(value, k,
                              "is a SkyPilot feature tandem does not support (jobs reaching a SkyPilot API "
                              "server); tandem has none");
                }
            } else if (k == "num_nodes") {
                if (auto v = m_w.parsed<int>(value, k, parse_positive_int)) {
                    m_spec.num_nodes = *v;
                }
            } else if (k == "resources") {
                detail::parse_resources_section(m_w, value, m_spec);
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
    // SkyPilot's `workdir: {url: ..., ref: ...}`.
    void git_workdir(const YAML::Node& node) {
        GitWorkdir git;
        for (const auto& [key, value] : m_w.entries(node, "workdir")) {
            const std::string field = "workdir." + key.Scalar();
            if (!m_w.known_key(key, "workdir", {"url", "ref"})) {
                continue;
            }
            m_spec.locations[field] = m_w.loc(key);
            if (auto v = m_w.scalar(value, field)) {
                (key.Scalar() == "url" ? git.url : git.ref) = *v;
            }
        }
        if (git.url.empty()) {
            m_w.error(node, "workdir.url", "a git workdir needs url (and optionally ref)");
            return;
        }
        if (auto ok = check_git_url(git.url); !ok) {
            m_w.error(node, "workdir.url", ok.error());
            return;
        }
        if (!git.ref.empty() && !valid_git_ref(git.ref)) {
            m_w.error(node, "workdir.ref", fmt::format("'{}' is not a branch, tag or commit name", git.ref));
            return;
        }
        m_spec.git_workdir = std::move(git);
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
                m_w.error(key, field,
                          "is not a valid variable name (letters, digits and _, not starting with a digit)");
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
            key.Scalar() == "slurm" ? slurm_section(value, path) : k8s_section(value, path);
        }
    }

    void slurm_section(const YAML::Node& node, const std::string& path) {
        std::optional<std::pair<YAML::Node, std::string>> sbatch;
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.admit(key, path, path, m_spec.notes)) {
                continue;
            }
            const std::string& k = key.Scalar();
            const std::string field = join_path(path, k);
            m_spec.locations[field] = m_w.loc(key);
            if (k == "sbatch_options") {
                sbatch = std::pair{value, field}; // after the rest: explicit fields win over its copies
                continue;
            }
            if (k == "quota") {
                slurm_quota(value, field);
                continue;
            }
            if (k == "provision_timeout") {
                m_spec.slurm.provision_timeout_seconds = provision_timeout(value, field);
                continue;
            }
            auto v = m_w.scalar(value, field);
            if (!v) {
                continue;
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
        }
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
        for (const auto& [key, value] : m_w.entries(node, path)) {
            if (!m_w.admit(key, path, path, m_spec.notes)) {
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
        }
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

    YamlWalker& m_w;
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
        diags.push_back(
            Diagnostic{spec.location_of("run"), "run", "the task needs `run` or `setup` (both are empty)"});
    }
    if (spec.name.empty()) {
        spec.name = default_name(spec.source_file);
    }
    if (spec.name.size() > 128 || std::any_of(spec.name.begin(), spec.name.end(),
                                              [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
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
    std::string where =
        d.loc.line > 0 ? fmt::format("{}:{}:{}", d.loc.file, d.loc.line, d.loc.column) : d.loc.file;
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
    YamlWalker walker(file_name, diags);
    std::vector<YAML::Node> docs;
    try {
        docs = YAML::LoadAll(std::string(text));
    } catch (const YAML::DeepRecursion& e) {
        // yaml-cpp's depth guard reuses its "bad file" text; say what actually happened.
        diags.push_back(
            Diagnostic{walker.loc(e.mark), "", "invalid YAML: the document is nested too deeply"});
        return result;
    } catch (const YAML::Exception& e) {
        diags.push_back(Diagnostic{walker.loc(e.mark), "", "invalid YAML: " + e.msg});
        return result;
    }
    if (docs.size() > 1) {
        diags.push_back(
            Diagnostic{walker.loc(docs[1]), "",
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
        diags.push_back(
            Diagnostic{walker.loc(root), "", "a task must be a mapping (name:, resources:, run: ...)"});
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

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string_view>& candidates) {
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
