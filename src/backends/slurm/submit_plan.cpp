#include "backends/slurm/submit_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "core/quantity.hpp"

namespace tandem::slurm {

std::string random_submit_token() {
    std::random_device rd;
    return fmt::format("tandem-{:08x}{:08x}", rd(), rd());
}

Result<SubmitPlan> build_submit_plan(const TaskSpec& spec, const Placement& placement, const Pool& pool,
                                     std::int64_t job_id, const std::string& cluster) {
    const auto options = spec.options();
    const auto index = static_cast<std::size_t>(placement.option_index);
    if (index >= options.size()) {
        return fail(ErrorKind::internal,
                    fmt::format("placement option {} out of range", placement.option_index));
    }
    const auto& resources = options[index].resources;
    SubmitPlan plan;
    plan.tandem_id = job_id;
    plan.submit_token = random_submit_token();
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
    if (resources.disk_size_gb) {
        plan.tmp_disk_mb = static_cast<int>(std::ceil(*resources.disk_size_gb * 1024));
    }
    if (spec.slurm.time) {
        auto minutes = parse_slurm_time_minutes(*spec.slurm.time);
        if (!minutes) {
            return fail(ErrorKind::invalid_spec, fmt::format("config.slurm.time: {}", minutes.error()));
        }
        plan.time_limit_minutes = *minutes;
    } else if (pool.max_time_minutes) {
        plan.time_limit_minutes = *pool.max_time_minutes;
    } else {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("partition {} on {} has no time limit and the task sets none", placement.pool,
                                cluster),
                    "set config.slurm.time in the task (e.g. time: 4:00:00); tandem never submits UNLIMITED");
    }
    plan.account = spec.slurm.account;
    plan.qos = spec.slurm.qos;
    plan.constraint = spec.slurm.constraint;
    for (const auto& kv : spec.envs) {
        plan.environment.push_back(kv);
    }
    for (const auto& kv : spec.secrets) {
        plan.environment.push_back(kv);
    }
    return plan;
}

} // namespace tandem::slurm
