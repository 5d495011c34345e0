// The GET /jobs skimmer (see jobs_skim.hpp): the one JSON scanner (core/json_skim.hpp) with a shape that
// keeps every top-level member whole but "jobs", whose objects keep only the members `keep` accepts.

#include "backends/slurm/jobs_skim.hpp"

#include "backends/slurm/rest_json.hpp"
#include "core/json_skim.hpp"

namespace tandem::slurm::rest {

namespace {

bool everything(std::string_view) { return true; }

} // namespace

std::optional<nlohmann::json> skim_jobs(std::string_view body, FieldFilter keep) {
    const json_skim::Shape job{{}, keep};
    const json_skim::Member jobs[] = {{"jobs", &job}};
    const json_skim::Shape answer{jobs, everything};
    json_skim::Scanner scan(body);
    nlohmann::json out;
    if (!scan.next_is('{') || !scan.value(out, &answer, 0) || !scan.at_end()) {
        return std::nullopt;
    }
    // The shape filters objects in "jobs" at any depth; only a list of jobs is read so (else the full
    // parse decides, and reports).
    if (const auto list = out.find("jobs"); list != out.end()) {
        if (!list->is_array()) {
            return std::nullopt;
        }
        for (const auto& item : *list) {
            if (item.is_array()) {
                return std::nullopt;
            }
        }
    }
    return out;
}

std::optional<std::int64_t> latest_job_event(const nlohmann::json& answer) {
    const auto& jobs = at_path(answer, {"jobs"});
    if (!jobs.is_array()) {
        return std::nullopt;
    }
    std::optional<std::int64_t> latest;
    for (const auto& job : jobs) {
        for (const auto* key :
             {"submit_time", "eligible_time", "start_time", "end_time", "last_sched_evaluation"}) {
            if (const auto t = timestamp(job, key); t && (!latest || *t > *latest)) {
                latest = t;
            }
        }
    }
    return latest;
}

} // namespace tandem::slurm::rest
