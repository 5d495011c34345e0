// Nodes -> pools. Facts used, all from the core/v1 Node and Pod objects every server version returns:
//   status.allocatable     cpu, memory, nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-<profile>
//   metadata.labels        the GPU product (see k_product_labels), nvidia.com/gpu.replicas
//   status.conditions      Ready
//   spec.unschedulable     cordoned
//   pods' spec.nodeName and container requests (limits when a request is missing: the API server defaults
//   requests to limits, but an object built by hand may lack them)
//
// GPU sharing. Time-slicing with renameByDefault exposes nvidia.com/gpu.shared; without it the plugin
// multiplies nvidia.com/gpu by the replica count and GPU feature discovery labels nvidia.com/gpu.replicas.
// Either way a pool counts physical GPUs: slices / replicas. The MIG "mixed" strategy exposes one resource
// per profile (nvidia.com/mig-1g.10gb); the "single" strategy exposes MIG devices as nvidia.com/gpu and
// suffixes the product label with -MIG-<profile>, which becomes the profile here.

#include "backends/k8s/node_inventory.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "backends/k8s/json_fields.hpp"

namespace tandem::k8s {

namespace {

using nlohmann::json;

constexpr std::string_view k_gpu = "nvidia.com/gpu";
constexpr std::string_view k_gpu_shared = "nvidia.com/gpu.shared";
constexpr std::string_view k_mig_prefix = "nvidia.com/mig-";
constexpr std::string_view k_replicas_label = "nvidia.com/gpu.replicas";

struct NodeFacts {
    std::string pool;
    std::string accelerator;
    std::string state; // Ready, NotReady, SchedulingDisabled
    bool usable = false;
    bool idle = true; // no workload pod bound to it
    int slices = 0;   // nvidia.com/gpu + nvidia.com/gpu.shared
    int replicas = 1;
    double requested_slices = 0;
    int cpus = 0;
    double memory_gb = 0;
    std::set<std::string> mig_profiles;
    bool time_sliced = false;
    int mig_devices = 0; // nvidia.com/mig-* allocatable, all profiles
    double requested_mig = 0;
};

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

double quantity_at(const json& resources, std::string_view key) {
    const auto text = fields::str(fields::get(&resources, key));
    return parse_quantity(text).value_or(0);
}

int int_quantity_at(const json& resources, std::string_view key) {
    return static_cast<int>(std::floor(quantity_at(resources, key) + 1e-9));
}

// The quantity of each resource a pod holds on its node: max(sum of containers, largest init container)
// plus the pod overhead, as the scheduler counts it.
std::map<std::string, double> pod_requests(const json& pod) {
    auto add_container = [](std::map<std::string, double>& into, const json& c, bool max_only) {
        std::map<std::string, double> own;
        for (const char* kind : {"limits", "requests"}) { // requests win when both are given
            const json* res = fields::at(c, "resources", kind);
            if (res == nullptr || !res->is_object()) {
                continue;
            }
            for (const auto& [name, value] : res->items()) {
                if (value.is_string()) {
                    own[name] = parse_quantity(value.get<std::string>()).value_or(0);
                }
            }
        }
        for (const auto& [name, v] : own) {
            into[name] = max_only ? std::max(into[name], v) : into[name] + v;
        }
    };
    std::map<std::string, double> sum;
    std::map<std::string, double> init;
    if (const json* cs = fields::at(pod, "spec", "containers"); cs != nullptr && cs->is_array()) {
        for (const auto& c : *cs) {
            add_container(sum, c, false);
        }
    }
    if (const json* inits = fields::at(pod, "spec", "initContainers");
        inits != nullptr && inits->is_array()) {
        for (const auto& c : *inits) {
            add_container(init, c, true);
        }
    }
    for (const auto& [name, v] : init) {
        sum[name] = std::max(sum[name], v);
    }
    if (const json* overhead = fields::at(pod, "spec", "overhead");
        overhead != nullptr && overhead->is_object()) {
        for (const auto& [name, value] : overhead->items()) {
            sum[name] += value.is_string() ? parse_quantity(value.get<std::string>()).value_or(0) : 0;
        }
    }
    return sum;
}

bool terminated(const json& pod) {
    const auto phase = fields::str_at(pod, "status", "phase");
    return phase == "Succeeded" || phase == "Failed";
}

// DaemonSet pods and static (mirror) pods run on every node whatever else does: they do not make a node busy.
bool workload(const json& pod) {
    if (fields::get(fields::at(pod, "metadata", "annotations"), "kubernetes.io/config.mirror") != nullptr) {
        return false;
    }
    if (const json* owners = fields::at(pod, "metadata", "ownerReferences");
        owners != nullptr && owners->is_array()) {
        for (const auto& o : *owners) {
            if (fields::str_at(o, "kind") == "DaemonSet") {
                return false;
            }
        }
    }
    return true;
}

bool ready(const json& node) {
    if (const json* conds = fields::at(node, "status", "conditions"); conds != nullptr && conds->is_array()) {
        for (const auto& c : *conds) {
            if (fields::str_at(c, "type") == "Ready") {
                return fields::str_at(c, "status") == "True";
            }
        }
    }
    return false;
}

NodeFacts facts_of(const json& node) {
    NodeFacts f;
    static const json empty = json::object();
    const json* labels = fields::at(node, "metadata", "labels");
    const json* alloc_p = fields::at(node, "status", "allocatable");
    const json& alloc = alloc_p != nullptr && alloc_p->is_object() ? *alloc_p : empty;

    const bool cordoned = fields::at(node, "spec", "unschedulable") != nullptr &&
                          fields::at(node, "spec", "unschedulable")->is_boolean() &&
                          fields::at(node, "spec", "unschedulable")->get<bool>();
    const bool is_ready = ready(node);
    f.usable = is_ready && !cordoned;
    f.state = cordoned ? "SchedulingDisabled" : is_ready ? "Ready" : "NotReady";

    f.cpus = int_quantity_at(alloc, "cpu");
    f.memory_gb = quantity_at(alloc, "memory") / (1024.0 * 1024.0 * 1024.0);
    const int whole = int_quantity_at(alloc, k_gpu);
    const int shared = int_quantity_at(alloc, k_gpu_shared);
    f.slices = whole + shared;
    if (const auto r = fields::str(fields::get(labels, k_replicas_label)); !r.empty()) {
        f.replicas = std::max(1, static_cast<int>(parse_quantity(r).value_or(1)));
    }
    f.time_sliced = shared > 0 || f.replicas > 1;
    for (const auto& [name, value] : alloc.items()) {
        if (name.rfind(k_mig_prefix, 0) == 0 && value.is_string() &&
            parse_quantity(value.get<std::string>()).value_or(0) > 0) {
            f.mig_profiles.insert(name.substr(k_mig_prefix.size()));
            f.mig_devices += int_quantity_at(alloc, name);
        }
    }

    std::string product;
    for (auto key : k_gpu_product_labels) {
        product = fields::str(fields::get(labels, key));
        if (!product.empty()) {
            break;
        }
    }
    const bool has_gpus = f.slices > 0 || !f.mig_profiles.empty();
    if (!product.empty() && has_gpus) {
        f.pool = product;
        f.accelerator = canonical_accelerator(product);
        if (auto mig = upper(product).find("-MIG-"); mig != std::string::npos) {
            f.mig_profiles.insert(product.substr(mig + 5));
        }
    } else if (has_gpus) {
        f.pool = "gpu";
        f.accelerator = "unknown-gpu";
    } else {
        f.pool = "cpu";
    }
    return f;
}

} // namespace

std::string canonical_accelerator(std::string_view label_value) {
    // SkyPilot's canonical names (sky/utils/gpu_names.py), more specific first, minus "H100-80GB": every
    // H100 but the MEGA has 80 GB, and a spec says "H100". A100-80GB and V100-32GB stay distinct from
    // A100 and V100 (40 and 16 GB), as in SkyPilot, so "A100" does not match an 80 GB pool.
    static constexpr std::array<std::string_view, 33> names{
        "GB300",     "GB200", "B300",  "B200",  "B100",  "GH200",     "H200", "H100-MEGA",   "H100",
        "A100-80GB", "A100",  "A10G",  "A10",   "A16",   "A30",       "A40",  "RTX6000-Ada", "L40S",
        "L40",       "L4",    "A6000", "A5000", "A4000", "V100-32GB", "V100", "P100",        "P40",
        "P4000",     "P4",    "T4g",   "T4",    "K80",   "M60"};
    std::string value = upper(label_value);
    std::replace(value.begin(), value.end(), '_', '-');
    std::replace(value.begin(), value.end(), ' ', '-');
    auto boundary = [&](std::size_t pos) {
        return pos >= value.size() || !std::isalnum(static_cast<unsigned char>(value[pos]));
    };
    for (auto name : names) {
        // "A100-80GB" is any A100 with an -80GB part: NVIDIA-A100-SXM4-80GB, nvidia-a100-80gb.
        if (auto dash = name.find('-');
            dash != std::string_view::npos && name.substr(dash) != "-MEGA" && name.substr(dash) != "-ADA") {
            const auto base = upper(name.substr(0, dash));
            const auto tail = upper(name.substr(dash));
            const auto at = value.find(base);
            if (at != std::string::npos && (at == 0 || boundary(at - 1)) && boundary(at + base.size()) &&
                value.find(tail, at) != std::string::npos) {
                return std::string(name);
            }
            continue;
        }
        const auto wanted = upper(name);
        for (auto at = value.find(wanted); at != std::string::npos; at = value.find(wanted, at + 1)) {
            if ((at == 0 || boundary(at - 1)) && boundary(at + wanted.size())) {
                return std::string(name);
            }
        }
    }
    // Unknown: SkyPilot's fallback, plus the sharing suffixes GPU feature discovery appends.
    for (std::string_view suffix : {"-SHARED"}) {
        if (value.size() > suffix.size() && value.ends_with(suffix)) {
            value.resize(value.size() - suffix.size());
        }
    }
    if (auto mig = value.find("-MIG-"); mig != std::string::npos) {
        value.resize(mig);
    }
    for (auto [from, to] :
         {std::pair<std::string_view, std::string_view>{"NVIDIA-", ""}, {"GEFORCE-", ""}, {"RTX-", "RTX"}}) {
        for (auto at = value.find(from); at != std::string::npos; at = value.find(from, at)) {
            value.replace(at, from.size(), to);
        }
    }
    return value;
}

ClusterInventory pools_from(const std::string& cluster, const json& node_list, const json& pod_list) {
    std::map<std::string, NodeFacts*> by_name;
    std::vector<NodeFacts> nodes;
    const auto& node_items = fields::items(node_list);
    nodes.reserve(node_items.size());
    for (const auto& n : node_items) {
        nodes.push_back(facts_of(n));
        by_name[fields::str_at(n, "metadata", "name")] = &nodes.back();
    }
    for (const auto& pod : fields::items(pod_list)) {
        auto it = by_name.find(fields::str_at(pod, "spec", "nodeName"));
        if (it == by_name.end() || terminated(pod)) {
            continue;
        }
        const auto req = pod_requests(pod);
        for (auto key : {k_gpu, k_gpu_shared}) {
            if (auto r = req.find(std::string(key)); r != req.end()) {
                it->second->requested_slices += r->second;
            }
        }
        for (const auto& [resource, amount] : req) {
            if (resource.rfind(k_mig_prefix, 0) == 0) {
                it->second->requested_mig += amount;
            }
        }
        it->second->idle = it->second->idle && !workload(pod);
    }

    std::map<std::string, Pool> pools;
    std::map<std::string, std::map<std::string, int>> states;
    for (const auto& f : nodes) {
        const int gpus = f.slices / f.replicas;
        auto [it, fresh] = pools.try_emplace(f.pool);
        Pool& p = it->second;
        if (fresh) {
            p.name = f.pool;
            p.accelerator = f.accelerator;
            p.gpus_per_node = gpus;
            p.cpus_per_node = f.cpus;
            p.memory_gb_per_node = f.memory_gb;
        } else {
            p.gpus_per_node = std::min(p.gpus_per_node, gpus);
            p.cpus_per_node = std::min(p.cpus_per_node, f.cpus);
            p.memory_gb_per_node = std::min(p.memory_gb_per_node, f.memory_gb);
        }
        ++p.nodes_total;
        p.gpus_total += gpus;
        if (f.usable) {
            const double free_slices = std::max(0.0, f.slices - f.requested_slices);
            p.gpus_free += static_cast<int>(std::floor(free_slices + 1e-9)) / f.replicas;
            p.nodes_free += f.idle ? 1 : 0;
            p.shared_free +=
                static_cast<int>(std::floor(std::max(0.0, f.mig_devices - f.requested_mig) + 1e-9));
            p.shared_free += f.time_sliced ? static_cast<int>(std::floor(free_slices + 1e-9)) : 0;
        }
        p.shared_total += f.mig_devices + (f.time_sliced ? f.slices : 0);
        for (const auto& m : f.mig_profiles) {
            if (std::find(p.mig_profiles.begin(), p.mig_profiles.end(), m) == p.mig_profiles.end()) {
                p.mig_profiles.push_back(m);
            }
        }
        p.time_sliced = p.time_sliced || f.time_sliced;
        ++states[f.pool][f.state];
    }
    ClusterInventory inv;
    inv.name = cluster;
    inv.kind = BackendKind::kubernetes;
    for (auto& [name, p] : pools) {
        std::sort(p.mig_profiles.begin(), p.mig_profiles.end());
        for (const auto& [state, count] : states[name]) {
            p.node_states.push_back(fmt::format("{}:{}", state, count));
        }
        inv.pools.push_back(std::move(p));
    }
    return inv;
}

} // namespace tandem::k8s
