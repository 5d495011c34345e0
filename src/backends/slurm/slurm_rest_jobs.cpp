// Reading job states from slurmrestd: one GET /slurm/VER/jobs for every job of a cluster, skimmed rather
// than parsed (jobs_skim.hpp); when the last full answer covered the same jobs, first only "has anything
// changed since?" (`?update_time=`, answered 304 when nothing has; jobs_snapshot.hpp). Jobs that left
// slurmctld (MinJobAge) are read from accounting, /slurmdb/VER/job/ID.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include <fmt/format.h>

#include "backends/slurm/job_array.hpp"
#include "backends/slurm/jobs_skim.hpp"
#include "backends/slurm/jobs_snapshot.hpp"
#include "backends/slurm/rest_api.hpp"
#include "backends/slurm/slurm_rest_backend.hpp"
#include "sys/clock.hpp"

namespace tandem::slurm {

namespace {

using sys::now_seconds;

} // namespace

Result<std::optional<nlohmann::json>> SlurmRestBackend::jobs_answer(std::optional<std::int64_t> since) {
    auto choice = api();
    if (!choice) {
        return tl::unexpected(choice.error());
    }
    const std::string query = since ? fmt::format("/jobs?update_time={}", *since) : "/jobs";
    auto body = call("GET", path("slurm", query), "", true, true);
    if (!body) {
        return tl::unexpected(body.error());
    }
    if (body->is_null()) {
        if (!since) { // a 304 nobody asked for
            return fail(
                ErrorKind::remote,
                fmt::format("cluster {}: slurmrestd answered GET /jobs with 304 Not Modified", m_cluster));
        }
        return std::optional<nlohmann::json>{};
    }
    return std::optional<nlohmann::json>{std::move(*body)};
}

Result<std::vector<SlurmJob>> SlurmRestBackend::parse_job_list(const nlohmann::json& answer) const {
    return api::parse_jobs(answer, m_api->version);
}

Result<std::vector<SlurmJob>> SlurmRestBackend::list_jobs() {
    auto answer = jobs_answer(std::nullopt);
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    return parse_job_list(**answer);
}

// GET /jobs lists every user's jobs, each with its user_name.
Result<SlurmListing> SlurmRestBackend::listing(bool all_users) {
    auto jobs = list_jobs();
    if (!jobs) {
        return tl::unexpected(jobs.error());
    }
    SlurmListing out;
    out.me = m_settings.rest->user;
    for (auto& j : *jobs) {
        if (j.user == out.me) {
            out.mine.push_back(std::move(j));
        } else if (all_users) {
            out.everyone.push_back(std::move(j));
        }
    }
    return out;
}

Result<std::optional<SlurmJob>> SlurmRestBackend::accounting_job(const std::string& slurm_id) {
    auto rows = accounting_rows(slurm_id);
    if (!rows) {
        return tl::unexpected(rows.error());
    }
    for (const auto& j : *rows) {
        if (j.job_id == slurm_id && !j.array_task && j.array_pending.empty()) {
            return std::optional<SlurmJob>{j};
        }
    }
    return std::optional<SlurmJob>{};
}

Result<std::vector<SlurmJob>> SlurmRestBackend::accounting_rows(const std::string& slurm_id) {
    if (!m_api->accounting) {
        return std::vector<SlurmJob>{};
    }
    auto body = call("GET", path("slurmdb", "/job/" + slurm_id), "", true);
    if (!body) {
        if (body.error().kind == ErrorKind::not_found) {
            return std::vector<SlurmJob>{};
        }
        return tl::unexpected(body.error());
    }
    auto jobs = api::parse_db_jobs(*body, m_api->version);
    if (!jobs) {
        if (jobs.error().kind == ErrorKind::not_found) { // "Nothing found" (9003) in an HTTP 200 answer
            return std::vector<SlurmJob>{};
        }
        return tl::unexpected(jobs.error());
    }
    std::vector<SlurmJob> out;
    for (auto& j : *jobs) {
        if (j.job_id == slurm_id) { // the job, or an element of the array of that id
            out.push_back(std::move(j));
        }
    }
    return out;
}

Result<std::vector<JobUpdate>> SlurmRestBackend::updates_from(const std::vector<SlurmJob>& listed,
                                                              const std::vector<JobRecord>& jobs) {
    // A job's entry by its id; a job array's (a sweep's) element entries by the array's id.
    std::map<std::string, const SlurmJob*> by_id;
    std::map<std::string, std::vector<SlurmJob>> array_lines;
    for (const auto& j : listed) {
        if (j.array_task || !j.array_pending.empty()) {
            array_lines[j.job_id].push_back(j);
        } else {
            by_id[j.job_id] = &j;
        }
    }
    std::vector<JobUpdate> out;
    out.reserve(jobs.size());
    for (const auto& job : jobs) {
        if (const auto sweep = sweep_of(job)) {
            auto& lines = array_lines[job.remote_id];
            if (!lists_every_element(lines, *sweep)) { // some elements left slurmctld: accounting has them
                auto accounted = accounting_rows(job.remote_id);
                if (!accounted) {
                    return tl::unexpected(accounted.error());
                }
                lines.insert(lines.end(), accounted->begin(), accounted->end());
            }
            std::vector<const SlurmJob*> seen;
            for (const auto& line : lines) {
                seen.push_back(&line);
            }
            out.push_back(array_update(*sweep, seen, job.elements,
                                       left_slurmctld(job.remote_id, m_api->accounting).reason));
            continue;
        }
        if (auto it = by_id.find(job.remote_id); it != by_id.end()) {
            out.push_back(to_job_update(*it->second));
            continue;
        }
        // Gone from slurmctld (MinJobAge): its final state is in accounting.
        auto accounted = accounting_job(job.remote_id);
        if (!accounted) {
            return tl::unexpected(accounted.error());
        }
        if (*accounted) {
            out.push_back(to_job_update(**accounted));
        } else {
            out.push_back(left_slurmctld(job.remote_id, m_api->accounting));
        }
    }
    return out;
}

void SlurmRestBackend::store_snapshot(std::int64_t sent_at, const nlohmann::json& answer,
                                      const std::vector<std::string>& ids) {
    const auto since = snapshot_since(sent_at, rest::latest_job_event(answer));
    auto content =
        make_snapshot(m_settings.rest->url, std::string(to_string(m_api->version)), since, answer, ids);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(m_jobs_snapshot_file).parent_path(), ec);
    // Written whole and renamed, so a concurrent reader never sees half a file.
    const std::string tmp = m_jobs_snapshot_file + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp);
        out << content;
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return; // no snapshot: the next refresh is a full one, which is only slower
        }
    }
    std::filesystem::rename(tmp, m_jobs_snapshot_file, ec);
}

Result<std::optional<std::vector<JobUpdate>>>
SlurmRestBackend::incremental_refresh(const std::vector<JobRecord>& jobs,
                                      const std::vector<std::string>& ids) {
    using Maybe = std::optional<std::vector<JobUpdate>>;
    // Only v0.0.38 (Slurm 22.05) answers an unchanged ?update_time= with 304. Slurm 24.11 refuses Unix
    // seconds there (422 "Parsing of ... for timestamp failed"), and in the forms it takes (an ISO time,
    // "now-N") answers 200 with only the changed jobs, which would always need a second, full request.
    if (m_api->version != ApiVersion::v0_0_38) {
        return Maybe{};
    }
    std::ifstream in(m_jobs_snapshot_file);
    if (!in) {
        return Maybe{};
    }
    const auto content = nlohmann::json::parse(in, nullptr, false);
    auto snapshot = read_snapshot(content, m_settings.rest->url, std::string(to_string(m_api->version)), ids);
    if (!snapshot) {
        return Maybe{};
    }
    const auto sent_at = now_seconds();
    auto answer = jobs_answer(snapshot->since);
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    auto listed = parse_job_list(*answer ? **answer : snapshot->answer);
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    std::map<std::string, bool> present;
    for (const auto& j : *listed) {
        present[j.job_id] = true;
    }
    for (const auto& id : ids) {
        if (!present[id]) {
            return Maybe{}; // left slurmctld, or a server that lists only changed jobs: ask in full
        }
    }
    if (*answer) {
        store_snapshot(sent_at, **answer, ids);
    }
    auto updates = updates_from(*listed, jobs);
    if (!updates) {
        return tl::unexpected(updates.error());
    }
    return Maybe(std::in_place, std::move(*updates));
}

Result<std::vector<JobUpdate>> SlurmRestBackend::refresh(const std::vector<JobRecord>& jobs) {
    auto choice = api();
    if (!choice) {
        return tl::unexpected(choice.error());
    }
    if (auto listed = take_discovered()) { // discovery's GET /jobs of a moment ago
        return updates_from(*listed, jobs);
    }
    std::vector<std::string> ids;
    ids.reserve(jobs.size());
    for (const auto& job : jobs) {
        ids.push_back(job.remote_id);
    }
    auto incremental = incremental_refresh(jobs, ids);
    if (!incremental) {
        return tl::unexpected(incremental.error());
    }
    if (*incremental) {
        return std::move(**incremental);
    }
    // One GET of every job slurmctld holds, whatever the number of tandem jobs.
    const auto sent_at = now_seconds();
    auto answer = jobs_answer(std::nullopt);
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    auto listed = parse_job_list(**answer);
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    if (choice->version == ApiVersion::v0_0_38) { // the one version with an incremental refresh (above)
        store_snapshot(sent_at, **answer, ids);
    }
    return updates_from(*listed, jobs);
}

} // namespace tandem::slurm
