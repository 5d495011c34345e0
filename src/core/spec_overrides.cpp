// Command-line overrides, as `sky launch` takes them: --env K=V, --env K (from the local environment),
// --secret K[=V], --gpus, --cpus, --memory, --num-nodes, --infra, -n/--name, and tandem's --sweep,
// --num-jobs, --sweep-parallel. They win over the file.

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/quantity.hpp"
#include "core/spec_parse_detail.hpp"

namespace tandem::detail {

namespace {

SourceLoc flag(const char* name) {
    return SourceLoc{name, 0, 0};
}

void set_value(PendingValues& values, const std::string& key, std::optional<std::string> value,
               const SourceLoc& where) {
    for (auto& [k, v] : values.entries) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    values.entries.emplace_back(key, std::move(value));
    values.locs.push_back(where);
}

void apply_values(const std::vector<std::string>& items, const char* flag_name, const char* field,
                  PendingValues& values, const LoadOptions& options, std::vector<Diagnostic>& diags) {
    for (const auto& item : items) {
        auto eq = item.find('=');
        std::string key = item.substr(0, eq);
        if (!valid_env_name(key)) {
            diags.push_back(
                Diagnostic{flag(flag_name), fmt::format("{}.{}", field, key),
                           fmt::format("'{}' is not a valid variable name (expected K=V or K)", key)});
            continue;
        }
        if (eq != std::string::npos) {
            set_value(values, key, item.substr(eq + 1), flag(flag_name));
            continue;
        }
        auto local = options.getenv ? options.getenv(key) : std::nullopt;
        if (!local) {
            diags.push_back(Diagnostic{flag(flag_name), fmt::format("{}.{}", field, key),
                                       "is not set in the local environment (use K=V to give a value)"});
            continue;
        }
        set_value(values, key, *local, flag(flag_name));
    }
}

template <typename T>
std::optional<T> parse_flag(const std::optional<std::string>& text, const char* flag_name, const char* field,
                            tl::expected<T, std::string> (*parse)(std::string_view),
                            std::vector<Diagnostic>& diags) {
    if (!text) {
        return std::nullopt;
    }
    auto v = parse(*text);
    if (!v) {
        diags.push_back(Diagnostic{flag(flag_name), field, v.error()});
        return std::nullopt;
    }
    return *v;
}

// Applies one resource override to the base and to every alternative, so --gpus means the same
// thing whether or not the file uses any_of.
template <typename F> void for_each_resources(TaskSpec& spec, F&& f) {
    f(spec.resources);
    for (auto& r : spec.alternatives) {
        f(r);
    }
}

// --sweep (repeatable: one grid, replacing the file's sweep) or --num-jobs, then the parallelism from
// --sweep-parallel or the file's sweep_parallel.
void apply_sweep(ParsedSpec& parsed, const SpecOverrides& o, std::vector<Diagnostic>& diags) {
    TaskSpec& spec = parsed.spec;
    if (!o.sweep_axes.empty() && o.num_jobs) {
        diags.push_back(Diagnostic{flag("--num-jobs"), "sweep",
                                   "--num-jobs and --sweep both say what the elements are; give one"});
        return;
    }
    if (!o.sweep_axes.empty()) {
        std::vector<SweepAxis> axes;
        for (const auto& text : o.sweep_axes) {
            auto axis = parse_sweep_axis(text);
            if (!axis) {
                diags.push_back(Diagnostic{flag("--sweep"), "sweep", axis.error()});
                return;
            }
            axes.push_back(std::move(*axis));
        }
        auto grid = sweep_grid(axes);
        if (!grid) {
            diags.push_back(Diagnostic{flag("--sweep"), "sweep", grid.error()});
            return;
        }
        spec.sweep = std::move(*grid);
        spec.locations["sweep"] = flag("--sweep");
    }
    if (auto n = parse_flag<int>(o.num_jobs, "--num-jobs", "sweep", parse_positive_int, diags)) {
        auto ranks = sweep_ranks(*n);
        if (!ranks) {
            diags.push_back(Diagnostic{flag("--num-jobs"), "sweep", ranks.error()});
            return;
        }
        spec.sweep = std::move(*ranks);
        spec.locations["sweep"] = flag("--num-jobs");
    }
    if (auto p = parse_flag<int>(o.sweep_parallel, "--sweep-parallel", "sweep_parallel", parse_positive_int,
                                 diags)) {
        parsed.sweep_parallel = *p;
        spec.locations["sweep_parallel"] = flag("--sweep-parallel");
    }
    if (parsed.sweep_parallel) {
        if (!spec.sweep) {
            diags.push_back(Diagnostic{spec.location_of("sweep_parallel"), "sweep_parallel",
                                       "limits a sweep, and the task has none (add sweep: or --sweep)"});
            return;
        }
        spec.sweep->parallel = *parsed.sweep_parallel;
    }
}

} // namespace

bool valid_env_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

void apply_overrides(ParsedSpec& parsed, const SpecOverrides& o, const LoadOptions& options,
                     std::vector<Diagnostic>& diags) {
    TaskSpec& spec = parsed.spec;
    apply_values(o.envs, "--env", "envs", parsed.envs, options, diags);
    apply_values(o.secrets, "--secret", "secrets", parsed.secrets, options, diags);
    if (o.name) {
        spec.name = *o.name;
        spec.locations["name"] = flag("--name");
    }
    if (auto n = parse_flag<int>(o.num_nodes, "--num-nodes", "num_nodes", parse_positive_int, diags)) {
        spec.num_nodes = *n;
        spec.locations["num_nodes"] = flag("--num-nodes");
    }
    if (o.gpus) {
        // --gpus takes one accelerator ("H100:8"); it replaces every accelerator choice in the file.
        if (auto acc = parse_flag<Accelerator>(o.gpus, "--gpus", "resources.accelerators", parse_accelerator,
                                               diags)) {
            for_each_resources(spec, [&](Resources& r) {
                r.accelerators = {*acc};
                r.locations["resources.accelerators"] = flag("--gpus");
            });
            spec.locations["resources.accelerators"] = flag("--gpus");
        }
    }
    if (auto q = parse_flag<Quantity>(o.cpus, "--cpus", "resources.cpus", parse_cpus, diags)) {
        for_each_resources(spec, [&](Resources& r) { r.cpus = *q; });
        spec.locations["resources.cpus"] = flag("--cpus");
    }
    if (auto q = parse_flag<Quantity>(o.memory, "--memory", "resources.memory", parse_memory_gb, diags)) {
        for_each_resources(spec, [&](Resources& r) { r.memory_gb = *q; });
        spec.locations["resources.memory"] = flag("--memory");
    }
    if (auto pin = parse_flag<InfraPin>(o.infra, "--infra", "resources.infra", parse_infra, diags)) {
        for_each_resources(spec, [&](Resources& r) { r.infra = *pin; });
        spec.locations["resources.infra"] = flag("--infra");
    }
    apply_sweep(parsed, o, diags);
}

void resolve_pending(ParsedSpec& parsed, std::vector<Diagnostic>& diags) {
    auto resolve = [&](PendingValues& values, const char* field, const char* flag_name,
                       std::vector<std::pair<std::string, std::string>>& out) {
        for (std::size_t i = 0; i < values.entries.size(); ++i) {
            auto& [key, value] = values.entries[i];
            if (!value) {
                diags.push_back(Diagnostic{values.locs[i], fmt::format("{}.{}", field, key),
                                           fmt::format("has no value; pass {} {}=VALUE", flag_name, key)});
                continue;
            }
            out.emplace_back(key, *value);
        }
    };
    resolve(parsed.envs, "envs", "--env", parsed.spec.envs);
    resolve(parsed.secrets, "secrets", "--secret", parsed.spec.secrets);
    // One name, two values: which one the job would see is a guess, and a secret could be shown as an env.
    for (std::size_t i = 0; i < parsed.secrets.entries.size(); ++i) {
        const std::string& name = parsed.secrets.entries[i].first;
        for (const auto& [env_name, value] : parsed.envs.entries) {
            if (env_name == name) {
                diags.push_back(Diagnostic{parsed.secrets.locs[i], "secrets." + name,
                                           "is also set in envs; give each name in one of them only"});
            }
        }
    }
}

} // namespace tandem::detail
