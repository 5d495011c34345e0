#pragma once
// Incremental refresh for GET /slurm/VER/jobs. slurmctld answers `?update_time=T` with 304 Not Modified
// when no job changed since T (Slurm 22.05: any change anywhere gives back every job, with 200). So after a
// full answer tandem keeps, per cluster, the jobs of that answer it asked about (their members as the
// skimmer kept them) and the T to send next time; a 304 then answers the refresh from the snapshot for
// the price of an empty response. Only a 304 is trusted this way: a 200 to an incremental request that
// lacks one of the jobs is never read as "unchanged" (a job that left slurmctld after MinJobAge is gone,
// and its final state is in accounting), the caller asks again in full.
//
// T must not be later than slurmctld's clock when it wrote the answer, or a change made just after could
// be missed. Two bounds, either of which suffices: the latest event the answer itself mentions plus one
// second (slurmctld's own clock; safe unless the answer was written within the second of that event), and
// the local send time minus one second (safe while the clocks agree within a second). T is the smaller.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::slurm {

struct JobsSnapshot {
    std::int64_t since = 0; // update_time for the next request
    nlohmann::json answer;  // {"jobs": [...]}: the kept members of every job the snapshot covers
};

// The update_time to send after a full answer requested at local time `sent_at`.
std::int64_t snapshot_since(std::int64_t sent_at, std::optional<std::int64_t> latest_event);

// The snapshot file's content: the jobs of `answer` whose id is in `ids`, for server `url` and API
// `version`.
nlohmann::json make_snapshot(const std::string& url, const std::string& version, std::int64_t since,
                             const nlohmann::json& answer, const std::vector<std::string>& ids);

// The snapshot in `file_content` when it was made for this url and version and covers every id in
// `ids`; nullopt otherwise (a stale or foreign file is simply not used).
std::optional<JobsSnapshot> read_snapshot(const nlohmann::json& file_content, const std::string& url,
                                          const std::string& version, const std::vector<std::string>& ids);

} // namespace tandem::slurm
