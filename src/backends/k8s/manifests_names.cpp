// Names, selectors and the server facts the manifests depend on (manifests.hpp): object names from the
// job, label selectors, the server version, the GPU resource a pool takes.

#include <algorithm>

#include <fmt/format.h>

#include "backends/k8s/labels.hpp"
#include "backends/k8s/manifests.hpp"
#include "backends/k8s/node_inventory.hpp"

namespace tandem::k8s {

using nlohmann::json;

std::optional<ServerFeatures> parse_server_version(const json& version) {
    if (!version.is_object()) {
        return std::nullopt;
    }
    auto text = version.value("gitVersion", std::string());
    int major = 0;
    int minor = 0;
    if (std::sscanf(text.c_str(), "v%d.%d", &major, &minor) != 2) {
        const auto maj = version.value("major", std::string());
        const auto min = version.value("minor", std::string()); // "27+" on some managed clusters
        if (std::sscanf(maj.c_str(), "%d", &major) != 1 || std::sscanf(min.c_str(), "%d", &minor) != 1) {
            return std::nullopt;
        }
    }
    return ServerFeatures{major, minor};
}

std::optional<GpuRequest> choose_gpu_request(const Accelerator& want, const Pool& pool) {
    GpuRequest r{"nvidia.com/gpu", 0, pool.name == "gpu" || pool.name == "cpu" ? std::string() : pool.name};
    if (!want.fractional()) {
        r.count = static_cast<int>(std::ceil(want.count));
        return r;
    }
    if (auto profile = mig_profile_for(want.count, pool.mig_profiles)) {
        r.resource = "nvidia.com/mig-" + *profile;
        r.count = 1;
        return r;
    }
    if (pool.time_sliced) {
        r.resource = "nvidia.com/gpu.shared";
        r.count = 1;
        return r;
    }
    return std::nullopt;
}

std::string job_base_name(const std::string& spec_name, std::int64_t tandem_id, const std::string& token) {
    std::string name;
    for (char c : spec_name) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u)) {
            name += static_cast<char>(std::tolower(u));
        } else if (!name.empty() && name.back() != '-') {
            name += '-';
        }
    }
    if (name.empty() || !std::isalpha(static_cast<unsigned char>(name.front()))) {
        name = "t-" + name;
    }
    const std::string suffix = fmt::format("-{}-{}", tandem_id, token);
    // Pods add "-<index>-xxxxx" (Indexed) or "-xxxxx"; hosts add "-<rank>": 40 characters leave room.
    const std::size_t keep = suffix.size() >= 40 ? 1 : 40 - suffix.size();
    name.resize(std::min(name.size(), keep));
    while (!name.empty() && name.back() == '-') {
        name.pop_back();
    }
    return name + suffix;
}

std::string job_name(const JobPlan& plan, int rank) {
    return plan.num_nodes > 1 && !plan.indexed ? fmt::format("{}-r{}", plan.base_name, rank) : plan.base_name;
}

std::string service_account_for(const json& remote_identity, const std::string& context) {
    std::string name;
    if (remote_identity.is_string()) {
        name = remote_identity.get<std::string>();
    } else if (remote_identity.is_object()) {
        auto it = remote_identity.find(context);
        if (it != remote_identity.end() && it->is_string()) {
            name = it->get<std::string>();
        }
    }
    if (name == "LOCAL_CREDENTIALS" || name == "SERVICE_ACCOUNT" || name == "NO_UPLOAD") {
        return {};
    }
    return name;
}

std::string job_selector(const std::string& base_name) {
    return fmt::format("{}={}", k_job_label, base_name);
}

std::string managed_selector() {
    return fmt::format("{}={}", k_managed_by_key, k_managed_by_value);
}

std::string label_value(std::string_view text) {
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    std::string out;
    for (char c : text.substr(0, 63)) {
        out += alnum(c) || c == '-' || c == '_' || c == '.' ? c : '.';
    }
    while (!out.empty() && !alnum(out.back())) {
        out.pop_back();
    }
    const auto first = std::find_if(out.begin(), out.end(), alnum);
    out.erase(out.begin(), first);
    return out.empty() ? std::string("unknown") : out;
}

nlohmann::json group_book_configmap(const std::string& base_name, const std::string& channel,
                                    const std::string& book) {
    nlohmann::json labels = {{std::string(k_managed_by_key), std::string(k_managed_by_value)},
                             {std::string(k_job_label), base_name}};
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", channel}, {"labels", labels}}},
            {"data", {{std::string(k_group_book_key), book}}}};
}

} // namespace tandem::k8s
