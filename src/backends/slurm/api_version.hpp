#pragma once
// Which slurmrestd OpenAPI version to speak. slurmrestd serves one path tree per loaded plugin
// (/slurm/v0.0.38/..., /slurm/v0.0.40/...) and lists them all in GET /openapi/v3. Slurm 22.05 offers
// v0.0.36-v0.0.38, 23.02 adds v0.0.39, 23.11 adds v0.0.40, 24.05 adds v0.0.41 and drops v0.0.38,
// 24.11 adds v0.0.42 and drops v0.0.39, 25.05 adds v0.0.43 (v0.0.40 deprecated from 25.05.1; see
// docs/SLURM_VERSIONS.md).
// tandem speaks v0.0.42, v0.0.41, v0.0.40 and v0.0.38 and prefers the newest the server offers, unless
// the cluster's rest.api_version pins one.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tandem::slurm {

enum class ApiVersion { v0_0_38, v0_0_40, v0_0_41, v0_0_42 };

std::string_view to_string(ApiVersion version); // "v0.0.38"

struct ApiChoice {
    ApiVersion version = ApiVersion::v0_0_38;
    // /slurmdb/<version>/job/{job_id} is served: finished jobs can be read from accounting after
    // slurmctld forgets them (MinJobAge). slurmrestd loads the slurmdb plugin only with slurmdbd.
    bool accounting = false;
    std::vector<std::string> offered; // every /slurm/ version the server lists, newest first
};

// `openapi` is the body of GET /openapi/v3 (an object with "paths"), or a JSON array of its path names.
// A version counts only when the paths tandem uses are all there. No supported version is a `remote`
// error that names what the server offers. `wanted` is "auto" or one version ("v0.0.40"): then only
// that one is taken, and its absence is a `config` error naming what the server offers.
Result<ApiChoice> choose_api_version(const nlohmann::json& openapi, std::string_view wanted = "auto");
Result<ApiChoice> choose_api_version(const std::vector<std::string>& paths, std::string_view wanted = "auto");

// The versions tandem speaks, newest first: "v0.0.42, v0.0.41, v0.0.40, v0.0.38".
std::string supported_api_versions();
bool is_supported_api_version(std::string_view name);

} // namespace tandem::slurm
