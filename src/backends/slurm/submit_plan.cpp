#include "backends/slurm/submit_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "core/git_checkout.hpp"
#include "core/quantity.hpp"
#include "sys/clock.hpp"

namespace tandem::slurm {

std::string random_submit_token() {
    return "tandem-" + sys::random_hex(16);
}

std::string applied_time_limit(const Pool& pool) {
    if (pool.default_time_minutes) {
        return fmt::format("the partition's DefaultTime, {}", format_slurm_time(*pool.default_time_minutes));
    }
    if (pool.max_time_minutes) {
        return fmt::format("the partition's MaxTime, {}", format_slurm_time(*pool.max_time_minutes));
    }
    return "none: the partition has no DefaultTime and its MaxTime is UNLIMITED";
}

Result<SubmitPlan> build_submit_plan(const TaskSpec& spec, const Placement& placement, const Pool& pool,
                                     std::int64_t job_id, const std::string& token) {
    const auto options = spec.options();
    const auto index = static_cast<std::size_t>(placement.option_index);
    if (index >= options.size()) {
        return fail(ErrorKind::internal,
                    fmt::format("placement option {} out of range", placement.option_index));
    }
    const auto& resources = options[index].resources;
    SubmitPlan plan;
    plan.tandem_id = job_id;
    plan.submit_token = token.empty() ? random_submit_token() : "tandem-" + token;
    plan.job_name = spec.name;
    plan.partition = placement.pool;
    plan.nodes = spec.num_nodes;
    if (!resources.accelerators.empty()) {
        plan.gpus_per_node = static_cast<int>(resources.accelerators.front().count);
        std::string name = resources.accelerators.front().name;
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        plan.gres_type = pool.accelerator.empty() ? name : pool.accelerator;
    }
    if (resources.cpus) {
        plan.cpus_per_task = static_cast<int>(std::ceil(resources.cpus->value));
    }
    if (resources.memory_gb) {
        plan.memory_mb_per_node = static_cast<int>(std::ceil(resources.memory_gb->value * 1024));
    }
    if (spec.slurm.time) {
        auto minutes = parse_slurm_time_minutes(*spec.slurm.time);
        if (!minutes) {
            return fail(ErrorKind::invalid_spec, fmt::format("config.slurm.time: {}", minutes.error()));
        }
        plan.time_limit_minutes = *minutes;
    } else {
        plan.time_limit_note = applied_time_limit(pool);
    }
    plan.account = spec.slurm.account;
    plan.qos = spec.slurm.qos;
    plan.constraint = spec.slurm.constraint;
    plan.extra_options = spec.slurm.sbatch_options;
    if (resources.job_recovery && !resources.job_recovery->disabled) {
        plan.recovery = *resources.job_recovery;
    }
    plan.sweep = spec.sweep;
    if (spec.git_workdir) {
        for (auto& kv : git_checkout_environment(*spec.git_workdir)) {
            plan.environment.push_back(std::move(kv));
        }
    }
    for (const auto& kv : spec.envs) {
        plan.environment.push_back(kv);
    }
    for (const auto& kv : spec.secrets) {
        plan.environment.push_back(kv);
    }
    return plan;
}

} // namespace tandem::slurm
