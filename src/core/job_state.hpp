#pragma once
// One state model for every backend. Adapters map their native states into this; the CLI maps it to
// exit codes. UNKNOWN is never stored as the last known state: it is what a refresh reports when the
// backend could not be reached, and the store keeps the previous state with its age.

#include <optional>
#include <string>
#include <string_view>

namespace tandem {

enum class JobState { pending, starting, running, succeeded, failed, cancelled, unknown };

std::string_view to_string(JobState state); // "PENDING", "RUNNING", ...
std::optional<JobState> job_state_from_string(std::string_view text);
bool is_terminal(JobState state);

// The reason of a job the user cancelled. Failover moves a job CANCELLED for any other reason (a backend
// cancelled it) but never one with this reason, so every writer of a user's cancel must use it.
inline constexpr std::string_view k_user_cancel_reason = "cancelled by user";
// The reason of a job whose submit may or may not have reached the cluster (a transport error or timeout
// around it): nothing submits it again; `status` settles it by its submit token (Backend::find_submitted).
inline constexpr std::string_view k_submit_unsure_reason = "submit outcome unknown:";

// Exit codes a job's outcome maps to, shared by `launch --wait`, `logs -f` and `status --exit-code`.
// A job that FAILED with its own exit code returns that code instead.
namespace job_exit {
inline constexpr int failed_without_code = 100;
inline constexpr int not_finished = 101;
inline constexpr int cancelled = 103;
inline constexpr int unknown = 104;
inline constexpr int never_started = 105;
} // namespace job_exit

// started: whether the job ever reached RUNNING (a failure before start maps to never_started).
int exit_code_for(JobState state, std::optional<int> exit_code, bool started);

} // namespace tandem
