// Version choice from the path list of GET /openapi/v3 (see api_version.hpp for the version history).

#include "backends/slurm/api_version.hpp"

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>

namespace tandem::slurm {

namespace {

struct Known {
    ApiVersion version;
    std::string_view name;
};

// Newest first: the order of preference.
constexpr std::array<Known, 4> k_supported{{
    {ApiVersion::v0_0_42, "v0.0.42"},
    {ApiVersion::v0_0_41, "v0.0.41"},
    {ApiVersion::v0_0_40, "v0.0.40"},
    {ApiVersion::v0_0_38, "v0.0.38"},
}};

// What the adapter calls; a server that lists a version without all of them cannot be used with it.
constexpr std::array<std::string_view, 5> k_needed{
    "/job/submit", "/job/{job_id}", "/jobs", "/partitions", "/nodes",
};

// "v0.0.40" < "v0.0.41" < "v0.0.100": compare the numbers, not the text.
std::vector<int> version_numbers(std::string_view v) {
    std::vector<int> out;
    int n = 0;
    bool any = false;
    for (char c : v.substr(1)) {
        if (c == '.') {
            out.push_back(n);
            n = 0;
            any = false;
        } else if (c >= '0' && c <= '9') {
            n = n < 100'000'000 ? n * 10 + (c - '0') : n; // saturates instead of overflowing
            any = true;
        }
    }
    if (any) {
        out.push_back(n);
    }
    return out;
}

bool has_path(const std::set<std::string, std::less<>>& paths, std::string_view prefix,
              std::string_view version, std::string_view rest) {
    const std::string p = fmt::format("{}/{}{}", prefix, version, rest);
    // Some servers list the collection paths with a trailing slash ("/slurm/v0.0.38/partitions/").
    return paths.count(p) > 0 || paths.count(p + "/") > 0;
}

} // namespace

std::string_view to_string(ApiVersion version) {
    for (const auto& k : k_supported) {
        if (k.version == version) {
            return k.name;
        }
    }
    return "v0.0.38";
}

std::string supported_api_versions() {
    std::string out;
    for (const auto& k : k_supported) {
        out += (out.empty() ? "" : ", ") + std::string(k.name);
    }
    return out;
}

bool is_supported_api_version(std::string_view name) {
    return std::any_of(k_supported.begin(), k_supported.end(), [&](const Known& k) { return k.name == name; });
}

Result<ApiChoice> choose_api_version(const std::vector<std::string>& path_list, std::string_view wanted) {
    const std::set<std::string, std::less<>> paths(path_list.begin(), path_list.end());
    ApiChoice choice;
    for (const auto& p : paths) {
        constexpr std::string_view prefix = "/slurm/v";
        if (p.rfind(prefix, 0) != 0) {
            continue;
        }
        const std::string v = p.substr(prefix.size() - 1, p.find('/', prefix.size()) - (prefix.size() - 1));
        if (v.size() < 2 || v.find_first_not_of("0123456789.", 1) != std::string::npos) {
            continue; // not a version ("v0.0.3\n{job_id}"): it would be quoted in the error below
        }
        if (std::find(choice.offered.begin(), choice.offered.end(), v) == choice.offered.end()) {
            choice.offered.push_back(v);
        }
    }
    std::sort(choice.offered.begin(), choice.offered.end(), [](const std::string& a, const std::string& b) {
        return version_numbers(a) > version_numbers(b);
    });

    const bool pinned = wanted != "auto";
    for (const auto& k : k_supported) {
        if (pinned && k.name != wanted) {
            continue;
        }
        const bool complete = std::all_of(k_needed.begin(), k_needed.end(), [&](std::string_view rest) {
            return has_path(paths, "/slurm", k.name, rest);
        });
        if (complete) {
            choice.version = k.version;
            choice.accounting = has_path(paths, "/slurmdb", k.name, "/job/{job_id}");
            return choice;
        }
    }
    std::string offered;
    for (const auto& v : choice.offered) {
        offered += (offered.empty() ? "" : ", ") + v;
    }
    if (offered.empty()) {
        offered = "no /slurm/ paths at all";
    }
    if (pinned) {
        return fail(ErrorKind::config,
                    fmt::format("rest.api_version {} is not served (slurmrestd offers {})", wanted, offered),
                    "set rest.api_version to one it offers, or to auto");
    }
    return fail(ErrorKind::remote,
                fmt::format("slurmrestd offers no API version tandem speaks (it offers {}; tandem speaks {})",
                            offered, supported_api_versions()),
                "ask the cluster's admin to load one of them in slurmrestd (its -s and -d options; "
                "`slurmrestd -s list` and `slurmrestd -d list` show what the installation has)");
}

Result<ApiChoice> choose_api_version(const nlohmann::json& openapi, std::string_view wanted) {
    std::vector<std::string> paths;
    if (openapi.is_object()) {
        const auto it = openapi.find("paths");
        if (it == openapi.end() || !it->is_object()) {
            return fail(ErrorKind::remote, "slurm: GET /openapi/v3 returned no \"paths\" object");
        }
        for (const auto& [path, ignored] : it->items()) {
            paths.push_back(path);
        }
        return choose_api_version(paths, wanted);
    }
    if (!openapi.is_array()) {
        return fail(ErrorKind::remote, "slurm: GET /openapi/v3 returned neither an object nor a path list");
    }
    for (const auto& p : openapi) {
        if (p.is_string()) {
            paths.push_back(p.get<std::string>());
        }
    }
    return choose_api_version(paths, wanted);
}

} // namespace tandem::slurm
