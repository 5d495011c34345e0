// Incremental GET /jobs snapshots (see jobs_snapshot.hpp for why 304 alone is trusted).

#include "backends/slurm/jobs_snapshot.hpp"

#include <algorithm>
#include <set>

#include "backends/slurm/rest_json.hpp"

namespace tandem::slurm {

namespace {

// A job array's element counts as its array's (a sweep is recorded by the array's id).
std::string job_id_of(const nlohmann::json& job) {
    if (const auto array = rest::number(job, "array_job_id"); array && *array > 0) {
        return std::to_string(*array);
    }
    const auto id = rest::number(job, "job_id");
    return id ? std::to_string(*id) : std::string();
}

} // namespace

std::int64_t snapshot_since(std::int64_t sent_at, std::optional<std::int64_t> latest_event) {
    const std::int64_t by_local_clock = sent_at - 1;
    return latest_event ? std::min(*latest_event + 1, by_local_clock) : by_local_clock;
}

nlohmann::json make_snapshot(const std::string& url, const std::string& version, std::int64_t since,
                             const nlohmann::json& answer, const std::vector<std::string>& ids) {
    const std::set<std::string> wanted(ids.begin(), ids.end());
    nlohmann::json jobs = nlohmann::json::array();
    const auto& listed = rest::at_path(answer, {"jobs"});
    for (const auto& job : listed.is_array() ? listed : nlohmann::json::array()) {
        if (job.is_object() && wanted.count(job_id_of(job)) != 0) {
            jobs.push_back(job);
        }
    }
    return nlohmann::json{{"url", url}, {"version", version}, {"since", since}, {"jobs", std::move(jobs)}};
}

std::optional<JobsSnapshot> read_snapshot(const nlohmann::json& file_content, const std::string& url,
                                          const std::string& version, const std::vector<std::string>& ids) {
    if (!file_content.is_object() || rest::text(file_content, "url") != url ||
        rest::text(file_content, "version") != version) {
        return std::nullopt;
    }
    const auto since = rest::number(file_content, "since");
    const auto& jobs = rest::at_path(file_content, {"jobs"});
    if (!since || *since <= 0 || !jobs.is_array()) {
        return std::nullopt;
    }
    std::set<std::string> covered;
    for (const auto& job : jobs) {
        covered.insert(job_id_of(job));
    }
    const bool all = std::all_of(
        ids.begin(), ids.end(), [&](const std::string& id) { return !id.empty() && covered.count(id) != 0; });
    if (!all || ids.empty()) {
        return std::nullopt;
    }
    return JobsSnapshot{*since, nlohmann::json{{"jobs", jobs}}};
}

} // namespace tandem::slurm
