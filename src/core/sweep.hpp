#pragma once
// A parameter sweep (issue 33): one job whose elements run the same task with different values, as the
// schedulers' own arrays (a Slurm job array, a Kubernetes Indexed Job; docs/ARCHITECTURE.md, "Sweeps").
// Pure: the grid, the command-line axis `--sweep K=a,b,c`, what each element sees and how it is named.
//
// Elements are numbered from 0 in grid order: the first key varies slowest, as nested loops written in
// the keys' order (`--sweep lr=1,2 --sweep bs=8,16` is lr=1 bs=8, lr=1 bs=16, lr=2 bs=8, lr=2 bs=16).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <tl/expected.hpp>

#include "core/error.hpp"
#include "core/job.hpp"
#include "core/job_state.hpp"

namespace tandem {

// At most this many elements in one sweep: far above Slurm's default MaxArraySize (1001, which the
// backend checks against the cluster's own), and what a status row can still count.
inline constexpr std::size_t k_max_sweep_elements = 10000;
// A value is an environment value: bounded so a grid cannot carry megabytes into every element.
inline constexpr std::size_t k_max_sweep_value_bytes = 4096;

struct Sweep {
    std::vector<std::string> keys;                  // environment names, in order
    std::vector<std::vector<std::string>> elements; // one value per key, per element
    int parallel = 0;                               // at most this many elements at once; 0: no limit

    std::size_t size() const { return elements.size(); }
};

using SweepAxis = std::pair<std::string, std::vector<std::string>>;

// The Cartesian product of `axes`; an error names the axis at fault (a key that is no variable name or
// one of tandem's own, a key given twice, no values, a value too long) or the size over the bound.
tl::expected<Sweep, std::string> sweep_grid(const std::vector<SweepAxis>& axes);

// Explicit elements (the `sweep:` list form): every element sets the same keys as the first, in any
// order; an error names the element (from 0) and the key.
tl::expected<Sweep, std::string>
sweep_elements(const std::vector<std::vector<std::pair<std::string, std::string>>>& elements);

// SkyPilot's `--num-jobs N`: N elements with no values (each sees its rank). 1 <= n <= the bound.
tl::expected<Sweep, std::string> sweep_ranks(long long n);

// `--sweep lr=0.1,0.01`: KEY=VALUE[,VALUE...]; `\,` is a comma inside a value, `\\` a backslash.
tl::expected<SweepAxis, std::string> parse_sweep_axis(std::string_view text);

// What element `index` sees beside the task's envs: its values, TANDEM_SWEEP_INDEX and TANDEM_SWEEP_SIZE,
// and SkyPilot's SKYPILOT_JOB_RANK and SKYPILOT_NUM_JOBS (the same numbers).
std::vector<std::pair<std::string, std::string>> sweep_element_env(const Sweep& sweep, std::size_t index);

// The same as shell text, for the scripts that run an element (a Slurm array task, a pod of an Indexed
// Job, a local run): a case over `index`, a shell expansion of the element's index such as
// "${SLURM_ARRAY_TASK_ID:-0}", that exports the element's values (single-quoted), then
// TANDEM_SWEEP_INDEX/_SIZE and SKYPILOT_JOB_RANK/SKYPILOT_NUM_JOBS. An error names the element that no
// shell string can hold (a NUL byte).
tl::expected<std::string, std::string> sweep_shell_block(const Sweep& sweep, std::string_view index);

// "lr=0.1 bs=16" for status and log prefixes; "#3" for an element without values. Values are shown as
// one line, cut at 40 bytes ("...").
std::string sweep_element_label(const Sweep& sweep, std::size_t index);

// The elements `logs` shows of job `job_id`: `element` alone (a usage error when the sweep has no such
// element), or every one in order.
Result<std::vector<std::size_t>> log_elements(std::int64_t job_id, const Sweep& sweep,
                                              std::optional<int> element);

// ---- Elements as a refresh sees them, and as the store keeps them ----

// One element's state and exit code.
struct ElementState {
    JobState state = JobState::pending;
    std::optional<int> exit_code;
    bool operator==(const ElementState& o) const { return state == o.state && exit_code == o.exit_code; }
};

// The store's compact text: per element a letter (P pending, T starting, R running, S succeeded, F failed,
// C cancelled, U unknown) and, when known, its exit code: "S0,R,F3,P". About three bytes an element.
std::string format_element_states(const std::vector<ElementState>& elements);
// nullopt when `text` is not that form or holds more than k_max_sweep_elements elements.
std::optional<std::vector<ElementState>> parse_element_states(std::string_view text);

// The sweep's one state from its elements: RUNNING while any runs (or starts), else PENDING while any
// waits, else FAILED when any failed, else CANCELLED when any was cancelled, else SUCCEEDED; UNKNOWN for
// none. Its exit code: the first failed element's (by index) or 0 when all succeeded.
struct SweepOutcome {
    JobState state = JobState::unknown;
    std::optional<int> exit_code;
    std::string reason; // "6 elements: 4 SUCCEEDED, 1 RUNNING, 1 FAILED"
};
SweepOutcome sweep_outcome(const std::vector<ElementState>& elements);

// The indexes a list such as "1,3-5,7" names (Slurm's array ranges, Kubernetes' completedIndexes and
// failedIndexes), each below `size`; nullopt when the text is not that form, names an index at or past
// `size`, or names more indexes than that.
std::optional<std::vector<std::size_t>> index_list(std::string_view text, std::size_t size);

// The sweep's JobUpdate from its elements: state and exit code as sweep_outcome says, the reason its
// counts, then `(pending_reason)` while it waits, then "; failed: " and the failed elements; and the
// elements in the store's text. Times are the caller's.
JobUpdate sweep_update(const Sweep& sweep, const std::vector<ElementState>& elements,
                       const std::string& pending_reason);

// The failed elements named for `launch --wait` and status: "#2 lr=0.01 bs=16: exit code 3; #5 ...",
// at most `limit` named, then "and N more".
std::string failed_elements_text(const Sweep& sweep, const std::vector<ElementState>& elements,
                                 std::size_t limit = 5);

// The sweep as a stored spec keeps it ({"keys": [...], "elements": [[...]...], "parallel": P}) and back;
// nullopt when `j` is not that (bounded as the loader bounds a sweep).
nlohmann::json sweep_to_json(const Sweep& sweep);
std::optional<Sweep> sweep_from_json(const nlohmann::json& j);

// The sweep of a stored job (JobRecord::spec_json's "sweep"), or nullopt for any other job. Cheap for a
// job without one: no JSON is parsed.
std::optional<Sweep> sweep_of(const JobRecord& job);

} // namespace tandem
