#pragma once
// The command table: every subcommand is one row in app.cpp and one file here (vcpkg's command table).

#include <functional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "core/error.hpp"

namespace CLI {
class App;
}

namespace tandem::cli {

// What a parsed subcommand does; returns the process exit code.
using Action = std::function<Result<int>(Context&)>;
using CommandSetup = void (*)(CLI::App& command, Action& action);

void setup_launch(CLI::App& command, Action& action);
void setup_status(CLI::App& command, Action& action);
void setup_logs(CLI::App& command, Action& action);
void setup_exec(CLI::App& command, Action& action);
void setup_shell(CLI::App& command, Action& action);
void setup_attach(CLI::App& command, Action& action);
void setup_completion(CLI::App& command, Action& action);
void setup_complete_helper(CLI::App& command, Action& action);
// The words after `--` of `tandem exec JOB -- CMD...`, taken off the command line before parsing.
void set_exec_command_tail(std::vector<std::string> words);
void setup_cancel(CLI::App& command, Action& action);
void setup_serve(CLI::App& command, Action& action);
void setup_plan(CLI::App& command, Action& action);
void setup_check(CLI::App& command, Action& action);
void setup_infra(CLI::App& command, Action& action);
void setup_dashboard(CLI::App& command, Action& action);

// Exit codes for tandem's own failures (job outcomes are in core/job_state.hpp).
namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int failure = 1;      // remote or internal error
inline constexpr int bad_input = 2;    // usage, task spec or config error
inline constexpr int not_found = 3;    // no such job or cluster
inline constexpr int unauthorized = 4; // a backend refused the credentials
inline constexpr int unavailable = 5;  // a backend could not be reached or timed out
inline constexpr int interrupted = 130;
} // namespace exit_code

int exit_code_for(ErrorKind kind);

// Shared by launch, plan: load the spec with overrides and check it against the configured backends.
struct SpecFlags {
    std::string file;
    SpecOverrides overrides;
};
void add_spec_flags(CLI::App& command, SpecFlags& flags);
Result<TaskSpec> load_task(Context& ctx, const SpecFlags& flags);

// The job's outcome as an exit code, and a one-line summary for stderr.
int job_exit_code(const JobView& view);
std::string job_summary(const JobView& view);

} // namespace tandem::cli
