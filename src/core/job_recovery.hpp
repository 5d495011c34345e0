#pragma once
// A job's recoveries as the clusters record them and tandem stores them (JobRecord::recoveries): a short
// list the job itself keeps up to date on the cluster (Slurm: a word of its comment; Kubernetes: read from
// the Job's failed pods), so `status` knows them with no tandem process running in between.
//
// Encoding: comma-separated events, oldest first: `x<code>` a user-code failure restarted (counted against
// max_restarts_on_errors), `c<code>` an exit code of recover_on_exit_codes restarted (not counted), `n` a
// node failure or preemption that requeued the job, `e` a pod evicted or disrupted. What comes from a
// cluster is untrusted: parsing is bounded and skips what it does not know.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

struct RecoveryEvent {
    enum class Kind { exit_code, recover_code, node_failure, disruption };
    Kind kind = Kind::exit_code;
    int code = 0; // exit_code, recover_code
};

inline constexpr std::size_t k_max_recovery_events = 200;

std::vector<RecoveryEvent> parse_recoveries(std::string_view text);
std::string format_recoveries(const std::vector<RecoveryEvent>& events);
// "exit code 3", "exit code 33 (recover_on_exit_codes)", "node failure, requeued", "evicted".
std::string describe(const RecoveryEvent& event);
// "1 recovery (exit code 3)", "2 recoveries (exit code 3; node failure, requeued)": for a reason.
std::string recoveries_summary(std::string_view text);

// recover_on_exit_codes as a cluster keeps them ("3,4"; a Kubernetes Job's annotation) and back: parsing
// keeps the codes 1-255 it can read, at most 255 of them.
std::string format_exit_codes(const std::vector<int>& codes);
std::vector<int> parse_exit_codes(std::string_view text);

// What `stored` knew of a job's recoveries with what a cluster `seen` now: every stored event is kept
// (a cluster may forget some: a Kubernetes pod replaced after an eviction is gone once it ended), and the
// events `seen` has beyond them are appended in its order. Counted per event, so a list that only grows
// (a Slurm comment) comes back as `seen`.
std::string merge_recoveries(std::string_view stored, std::string_view seen);

} // namespace tandem
