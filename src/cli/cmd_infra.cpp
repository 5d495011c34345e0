// `tandem infra`: what every configured cluster offers now: pools, GPU type, GPUs per node, free/total.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/task_planning.hpp"
#include "core/quantity.hpp"

namespace tandem::cli {

namespace {

// "8/8"; a pool that shares GPUs adds its MIG devices or time-sliced replicas: "0/0 +7/7 MIG".
std::string gpu_counts(const Pool& p) {
    std::string out = fmt::format("{}/{}", p.gpus_free, p.gpus_total);
    if (p.shared_total > 0) {
        out += fmt::format(" +{}/{} {}", p.shared_free, p.shared_total,
                           p.mig_profiles.empty() ? "shared" : "MIG");
    }
    return out;
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        out += (out.empty() ? "" : ",") + i;
    }
    return out.empty() ? "-" : out;
}

Result<int> infra(Context& ctx, bool json) {
    auto gathered = gather_inventory(ctx);
    if (!gathered) {
        return tl::unexpected(gathered.error());
    }
    const Inventory& inventory = *gathered;
    int rc = exit_code::ok;
    Table table({"CLUSTER", "TYPE", "POOL", "ACCELERATOR", "GPUS/NODE", "GPUS FREE/TOTAL", "NODES FREE/TOTAL",
                 "CPUS/NODE", "MEM/NODE", "NODE STATES"});
    auto clusters = nlohmann::json::array();
    for (const auto& c : inventory.clusters) {
        nlohmann::json cj{{"cluster", c.name}, {"type", to_string(c.kind)}, {"reachable", c.reachable}};
        if (!c.reachable) {
            rc = exit_code::unavailable;
            cj["error"] = c.error;
            table.add({c.name, std::string(to_string(c.kind)), "-", "unreachable", "-", "-", "-", "-", "-",
                       c.error});
            clusters.push_back(cj);
            continue;
        }
        auto pools = nlohmann::json::array();
        for (const auto& p : c.pools) {
            std::string sharing;
            if (!p.mig_profiles.empty()) {
                sharing = " (MIG " + join(p.mig_profiles) + ")";
            } else if (p.time_sliced) {
                sharing = " (time-sliced)";
            }
            table.add({c.name, std::string(to_string(c.kind)), p.name,
                       p.accelerator.empty() ? "-" : p.accelerator + sharing, std::to_string(p.gpus_per_node),
                       gpu_counts(p), fmt::format("{}/{}", p.nodes_free, p.nodes_total),
                       std::to_string(p.cpus_per_node),
                       fmt::format("{}G", format_number(
                                              static_cast<double>(static_cast<long>(p.memory_gb_per_node)))),
                       join(p.node_states)});
            pools.push_back(to_json(p));
        }
        cj["pools"] = pools;
        clusters.push_back(cj);
    }
    json ? print_json(nlohmann::json{{"clusters", clusters}}) : print_stdout(table.render());
    return rc;
}

} // namespace

void setup_infra(CLI::App& command, Action& action) {
    auto json = std::make_shared<bool>(false);
    command.add_flag("--json", *json,
                     "JSON on stdout: {\"clusters\": [{cluster, type, reachable, pools: [...]}]}");
    command.footer("An unreachable cluster is one row with the reason; the exit code is then 5.");
    command.callback([json, &action] { action = [json](Context& ctx) { return infra(ctx, *json); }; });
}

} // namespace tandem::cli
