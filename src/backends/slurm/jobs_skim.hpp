#pragma once
// Reading GET /slurm/VER/jobs without building a DOM of it. On Slurm 22.05 each job carries about 110
// members (3 KB); a refresh reads ten. The skimmer walks the answer's top-level object and the objects of
// its "jobs" list, builds values only for the members `keep` accepts, and steps over everything else (the
// scanner is core/json_skim.hpp, which Kubernetes' List skimmer shares). Other top-level members
// (meta, errors, warnings, last_update) are small and parsed whole. The result has the answer's shape, so
// the parsers of rest_api.hpp read it unchanged, in every dialect.

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tandem::slurm::rest {

using FieldFilter = bool (*)(std::string_view key);

// nullopt when the text is not a JSON object as far as the skimmer can tell (truncated, unbalanced, a bad
// kept value, kept values nested over 64 deep, trailing text), or "jobs" is not a list of jobs. The caller then parses it fully, which reports what is wrong.
std::optional<nlohmann::json> skim_jobs(std::string_view body, FieldFilter keep);

// The latest Unix time any job in a (skimmed) GET /jobs answer mentions: submit, eligible, start, end,
// last scheduling evaluation. slurmctld wrote the answer at or after that moment, by its own clock.
std::optional<std::int64_t> latest_job_event(const nlohmann::json& answer);

} // namespace tandem::slurm::rest
