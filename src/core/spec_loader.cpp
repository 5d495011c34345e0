// The YAML walk of a SkyPilot-compatible task file. yaml-cpp exceptions stop at this file's boundary;
// every problem becomes a Diagnostic and the walk goes on, so the user sees all of them at once.
// The node-level helpers live in yaml_walker.cpp and the `resources` section in resources_parser.cpp.

#include "core/spec_loader.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "core/config_section_parser.hpp"
#include "core/quantity.hpp"
#include "core/resources_parser.hpp"
#include "core/service_parser.hpp"
#include "core/spec_parse_detail.hpp"
#include "core/sweep_parser.hpp"
#include "core/value_checks.hpp"
#include "core/yaml_load.hpp"
#include "core/yaml_walker.hpp"

namespace tandem {

PathInfo LoadOptions::inspect(const std::string& path) const {
    return files.inspect ? files.inspect(path) : PathInfo{path, PathKind::missing};
}

PathInfo LoadOptions::local_path(const std::string& written) const {
    const std::string home = getenv ? getenv("HOME").value_or("") : std::string();
    return inspect(expand_local_path(written, home, base_dir));
}

namespace {

using detail::join_path;
using detail::ParsedSpec;
using detail::PendingValues;
using detail::YamlWalker;

class SpecWalker {
public:
    SpecWalker(YamlWalker& w, ParsedSpec& out, const LoadOptions& options)
        : m_w(w), m_out(out), m_spec(out.spec), m_options(options) {}

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
                detail::parse_config_section(m_w, value, m_spec);
            } else if (k == "service") {
                detail::parse_service_section(m_w, value, m_spec, m_options);
            } else if (k == "sweep") {
                detail::parse_sweep_section(m_w, value, m_spec);
            } else if (k == "sweep_parallel") {
                m_out.sweep_parallel = m_w.parsed<int>(value, k, parse_positive_int);
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

    YamlWalker& m_w;
    ParsedSpec& m_out;
    TaskSpec& m_spec;
    const LoadOptions& m_options;
};

std::string default_name(const std::string& file) {
    auto stem = std::filesystem::path(file).stem().string();
    return stem.empty() ? "task" : stem;
}

// Checks that need the whole spec: presence of run/setup, name shape, workdir on disk.
void resolve_file_mounts(TaskSpec& spec, const LoadOptions& options, std::vector<Diagnostic>& diags);

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
        const std::string written = *spec.workdir; // (no `~`: taken as written, relative to base_dir)
        const std::filesystem::path path(written);
        const PathInfo p = options.inspect(
            path.is_relative() ? (std::filesystem::path(options.base_dir) / path).string() : written);
        if (p.kind != PathKind::directory) {
            diags.push_back(Diagnostic{spec.location_of("workdir"), "workdir",
                                       fmt::format("'{}' is not a directory", *spec.workdir)});
        } else {
            spec.workdir = p.path;
        }
    }
    if (spec.sweep && spec.service) {
        diags.push_back(
            Diagnostic{spec.location_of("sweep"), "sweep",
                       "a service runs replicas of one task, not a sweep; launch the sweep as a job"});
    }
    resolve_file_mounts(spec, options, diags);
}

// file_mounts: a local source (a path, `~/...`, or relative to the current directory, as SkyPilot reads
// it) must exist and becomes absolute; object-store URLs and storage objects stay as written (each
// backend says whether it can take them). Destinations are paths: absolute, `~/...`, or relative to the
// home folder where the task runs.
void resolve_file_mounts(TaskSpec& spec, const LoadOptions& options, std::vector<Diagnostic>& diags) {
    for (auto& [destination, value] : spec.file_mounts) {
        const std::string field = "file_mounts." + destination;
        if (destination.empty() ||
            std::any_of(destination.begin(), destination.end(), [](unsigned char c) { return c < 0x20; })) {
            diags.push_back(
                Diagnostic{spec.location_of(field), "file_mounts",
                           "a destination must be a path (absolute, ~/..., or relative to the home "
                           "folder)"});
            continue;
        }
        if (!value.is_string()) {
            continue;
        }
        const std::string source = value.get<std::string>();
        if (source.find("://") != std::string::npos) {
            continue;
        }
        const PathInfo p = options.local_path(source);
        if (source.empty() || p.kind == PathKind::missing) {
            diags.push_back(
                Diagnostic{spec.location_of(field), field, fmt::format("'{}' does not exist", source)});
            continue;
        }
        value = p.path;
    }
}

} // namespace

std::string format_diagnostic(const Diagnostic& d) {
    std::string where =
        d.loc.line > 0 ? fmt::format("{}:{}:{}", d.loc.file, d.loc.line, d.loc.column) : d.loc.file;
    std::string text = d.path.empty() ? fmt::format("{}: {}", where, d.message)
                                      : fmt::format("{}: {}: {}", where, d.path, d.message);
    // One line each (format_diagnostics joins them with '\n'), also when a key or value holds a line break.
    std::replace_if(
        text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    return text;
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

namespace detail {

namespace {

// Counts a document's events and remembers where its lone null (an empty document) was reported.
class DocumentProbe : public YAML::EventHandler {
public:
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { seen(mark); }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { seen(mark); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
        seen(mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
        seen(mark);
    }
    void OnSequenceEnd() override { ++events; }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
        seen(mark);
    }
    void OnMapEnd() override { ++events; }

    int events = 0;
    YAML::Mark first;

private:
    void seen(const YAML::Mark& mark) {
        if (events++ == 0) {
            first = mark;
        }
    }
};

// The most documents a task file may hold (a pipeline of this many tasks is not a file a person writes).
constexpr int k_max_documents = 1000;

// yaml-cpp 0.7's LoadAll never returns on some inputs (a lone ',' where a document starts): its parser
// reports an empty document there without consuming anything, again and again, and LoadAll keeps them
// all. A first pass with the event parser finds that (two empty documents at one position) and bounds the
// number of documents, so the real load only ever sees text it finishes.
std::optional<Diagnostic> unfinishable(const std::string& text, const YamlWalker& walker) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    std::optional<std::size_t> last_empty_at;
    for (int n = 0;; ++n) {
        DocumentProbe probe;
        if (!parser.HandleNextDocument(probe)) {
            return std::nullopt;
        }
        if (n >= k_max_documents) {
            return Diagnostic{walker.loc(probe.first), "",
                              fmt::format("the file holds more than {} YAML documents", k_max_documents)};
        }
        const bool empty = probe.events == 1;
        const auto at = static_cast<std::size_t>(std::max(probe.first.pos, 0));
        if (empty && last_empty_at == at) {
            std::string what = at < text.size() ? fmt::format("'{}'", text[at]) : "the end of the file";
            return Diagnostic{
                walker.loc(probe.first), "",
                fmt::format("invalid YAML: unexpected {} where a value or a document should start", what)};
        }
        last_empty_at = empty ? std::optional<std::size_t>(at) : std::nullopt;
    }
}

} // namespace

std::optional<std::vector<YAML::Node>> load_documents(std::string_view text, const std::string& file_name,
                                                      std::vector<Diagnostic>& diags) {
    YamlWalker walker(file_name, diags);
    try {
        const std::string owned(text);
        if (auto stuck = unfinishable(owned, walker)) {
            diags.push_back(*stuck);
            return std::nullopt;
        }
        return YAML::LoadAll(owned);
    } catch (const YAML::DeepRecursion& e) {
        // yaml-cpp's depth guard reuses its "bad file" text; say what actually happened.
        diags.push_back(
            Diagnostic{walker.loc(e.mark), "", "invalid YAML: the document is nested too deeply"});
    } catch (const YAML::Exception& e) {
        diags.push_back(Diagnostic{walker.loc(e.mark), "", "invalid YAML: " + e.msg});
    }
    return std::nullopt;
}

SpecLoad load_spec_root(const YAML::Node& root, const std::string& file_name, const SpecOverrides& overrides,
                        const LoadOptions& options) {
    SpecLoad result;
    auto& diags = result.diagnostics;
    YamlWalker walker(file_name, diags);
    if (!root.IsMap()) {
        diags.push_back(
            Diagnostic{walker.loc(root), "", "a task must be a mapping (name:, resources:, run: ...)"});
        return result;
    }
    ParsedSpec parsed;
    parsed.spec.source_file = file_name;
    try {
        SpecWalker(walker, parsed, options).top(root);
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

} // namespace detail

SpecLoad load_spec(std::string_view text, const std::string& file_name, const SpecOverrides& overrides,
                   const LoadOptions& options) {
    SpecLoad result;
    auto docs = detail::load_documents(text, file_name, result.diagnostics);
    if (!docs) {
        return result;
    }
    if (docs->size() > 1) {
        YamlWalker walker(file_name, result.diagnostics);
        walker.error((*docs)[1], "",
                     "the file holds several YAML documents (---), a pipeline or job group; load it as one");
        return result;
    }
    if (docs->empty() || (*docs)[0].IsNull()) {
        result.diagnostics.push_back(Diagnostic{SourceLoc{file_name, 1, 1}, "", "the task file is empty"});
        return result;
    }
    return detail::load_spec_root((*docs)[0], file_name, overrides, options);
}

std::optional<std::string> read_task_text(const std::string& path, const LoadOptions& options,
                                          std::vector<Diagnostic>& diags) {
    if (!options.files.read) {
        diags.push_back(Diagnostic{SourceLoc{path, 0, 0}, "", "cannot read the task file"});
        return std::nullopt;
    }
    auto text = options.files.read(path, k_max_input_file);
    if (!text || !*text) {
        diags.push_back(Diagnostic{SourceLoc{path, 0, 0}, "",
                                   text && !*text ? "cannot read the task file"
                                                  : "cannot read the task file: " + text.error().message});
        return std::nullopt;
    }
    return std::move(**text);
}

SpecLoad load_spec_file(const std::string& path, const SpecOverrides& overrides, const LoadOptions& options) {
    SpecLoad result;
    auto text = read_task_text(path, options, result.diagnostics);
    return text ? load_spec(*text, path, overrides, options) : result;
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

Result<YAML::Node> load_yaml_document(std::string_view text, const std::string& file_name) {
    std::vector<Diagnostic> diags;
    auto docs = detail::load_documents(text, file_name, diags);
    if (!docs) {
        return fail(ErrorKind::config, diags.empty() ? file_name + ": invalid YAML" : format_diagnostic(diags.front()));
    }
    return docs->empty() ? YAML::Node() : docs->front();
}

} // namespace tandem
