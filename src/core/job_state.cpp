#include "core/job_state.hpp"

#include <array>
#include <utility>

#include "core/job.hpp"

namespace tandem {

namespace {
constexpr std::array<std::pair<JobState, std::string_view>, 7> k_names{{
    {JobState::pending, "PENDING"},
    {JobState::starting, "STARTING"},
    {JobState::running, "RUNNING"},
    {JobState::succeeded, "SUCCEEDED"},
    {JobState::failed, "FAILED"},
    {JobState::cancelled, "CANCELLED"},
    {JobState::unknown, "UNKNOWN"},
}};
} // namespace

std::string_view to_string(JobState state) {
    for (const auto& [s, name] : k_names) {
        if (s == state) {
            return name;
        }
    }
    return "UNKNOWN";
}

std::optional<JobState> job_state_from_string(std::string_view text) {
    for (const auto& [s, name] : k_names) {
        if (name == text) {
            return s;
        }
    }
    return std::nullopt;
}

bool is_terminal(JobState state) {
    return state == JobState::succeeded || state == JobState::failed || state == JobState::cancelled;
}

int exit_code_for(JobState state, std::optional<int> exit_code, bool started) {
    switch (state) {
    case JobState::succeeded:
        return 0;
    case JobState::failed:
        if (exit_code && *exit_code != 0) {
            return *exit_code;
        }
        return started ? job_exit::failed_without_code : job_exit::never_started;
    case JobState::cancelled:
        return job_exit::cancelled;
    case JobState::unknown:
        return job_exit::unknown;
    case JobState::pending:
    case JobState::starting:
    case JobState::running:
        return job_exit::not_finished;
    }
    return job_exit::unknown;
}

} // namespace tandem
