#pragma once
// Loading a task spec: YAML text -> TaskSpec, collecting every problem (not just the first) as a
// diagnostic with file:line:col and the dotted field path. Command-line overrides are applied before
// validation so a value given with --env satisfies an `envs` entry left empty in the file.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/files.hpp"
#include "core/inventory.hpp"
#include "core/spec.hpp"

namespace tandem {

struct Diagnostic {
    SourceLoc loc;
    std::string path; // "resources.accelerators"
    std::string message;
};
// "task.yaml:3:5: resources.accelerators: message"
std::string format_diagnostic(const Diagnostic& d);
std::string format_diagnostics(const std::vector<Diagnostic>& ds); // one per line, no trailing newline

// SkyPilot-style command-line overrides.
struct SpecOverrides {
    std::vector<std::string> envs;    // "K=V" or "K" (copied from the local environment)
    std::vector<std::string> secrets; // same forms
    std::optional<std::string> gpus, cpus, memory, infra, name;
    std::optional<std::string> num_nodes;
    // launch --sweep K=a,b (repeatable; together they replace the file's sweep), --num-jobs N (SkyPilot's:
    // N elements without values) and --sweep-parallel N.
    std::vector<std::string> sweep_axes;
    std::optional<std::string> num_jobs, sweep_parallel;
};

struct LoadOptions {
    std::string base_dir; // relative `workdir` is resolved against this (the current directory)
    std::function<std::optional<std::string>(const std::string&)> getenv; // for `--env K` and `~`
    // Reading the task file, and checking workdir, file_mounts sources and tls files (core/files.hpp).
    // Without it, every local path is reported missing.
    FileAccess files;

    // What a local path written in a task file names, as file_mounts sources are read (SkyPilot's way):
    // `~` is the home folder, a relative path is read from base_dir. The path comes back absolute.
    PathInfo local_path(const std::string& written) const;
    // `path` as the file access sees it (missing without a file access).
    PathInfo inspect(const std::string& path) const;
};

struct SpecLoad {
    std::optional<TaskSpec> spec; // set only when diagnostics is empty
    std::vector<Diagnostic> diagnostics;
};

SpecLoad load_spec(std::string_view text, const std::string& file_name, const SpecOverrides& overrides,
                   const LoadOptions& options);
SpecLoad load_spec_file(const std::string& path, const SpecOverrides& overrides, const LoadOptions& options);

// The text of a task file, or a diagnostic when it cannot be read.
std::optional<std::string> read_task_text(const std::string& path, const LoadOptions& options,
                                          std::vector<Diagnostic>& diagnostics);

// A field no configured backend kind can honour is an error here, naming each kind and why.
std::vector<Diagnostic> check_backend_support(const TaskSpec& spec, const std::vector<BackendKind>& kinds);

// Closest candidate within a small edit distance, for "did you mean".
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string_view>& candidates);

} // namespace tandem
