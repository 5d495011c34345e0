#pragma once
// A sweep (core/sweep.hpp) as one Slurm job array: how its elements' lines in squeue and sacct are read
// ("123_4", "123_[0-5%2]") and folded into the one job tandem shows (JobUpdate::elements).

#include <string_view>
#include <vector>

#include "backends/slurm/slurm_model.hpp"
#include "core/job.hpp"
#include "core/sweep.hpp"

namespace tandem::slurm {

// Slurm's job id as squeue and sacct print it: "123", "123_4" (element 4 of array 123) or "123_[0-5%2]"
// / "123_[1,3-5]" (array 123's elements still pending, on one line). Fills job.job_id, array_task and
// array_pending; false for anything else (a heterogeneous job's "123+0" among them).
bool read_slurm_job_id(std::string_view text, SlurmJob& job);

// sbatch's --array value for a sweep: "0-(N-1)", with "%P" when at most P run at once.
std::string array_range(const Sweep& sweep);

// The indexes "0-5%2" or "1,3-5" names (the throttle after % dropped), each below `size`; nullopt when
// the text is not that form or names an index at or past `size`.
std::optional<std::vector<std::size_t>> array_indexes(std::string_view text, std::size_t size);

// Whether `lines` (one array's) name every element of `sweep`: else accounting is asked for the rest.
bool lists_every_element(const std::vector<SlurmJob>& lines, const Sweep& sweep);

// The sweep's one update from what Slurm listed of its array (`lines`: squeue's, then sacct's; the first
// word on an element wins) and what the store held (`stored`, JobRecord::elements). An element neither
// lists keeps its stored state when that was final, and is UNKNOWN otherwise (`unseen_reason` says why).
JobUpdate array_update(const Sweep& sweep, const std::vector<const SlurmJob*>& lines, std::string_view stored,
                       const std::string& unseen_reason);

// The output file of element `index` from the job's remembered pattern (its %a replaced).
std::string element_output(const std::string& pattern, std::size_t index);

} // namespace tandem::slurm
