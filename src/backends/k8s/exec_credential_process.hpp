#pragma once
// Internal to exec credential plugins: run a program without a shell and collect its stdout, with a time
// limit and an output cap. stdin is /dev/null; stderr is inherited (the plugin talks to the user there).

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tandem::k8s::detail {

struct ProcessOutcome {
    enum class End { exited, signalled, timed_out, too_much_output, spawn_failed };
    End end = End::exited;
    int code = 0; // exit code, signal number, or errno for spawn_failed
    std::string stdout_text;
};

// `program` is a path (already looked up); `env` holds complete "K=V" strings.
ProcessOutcome run_process(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& env, std::chrono::milliseconds timeout,
                           std::size_t max_output);

// PATH lookup as execvp does it: the first executable regular file. Empty when none.
std::string find_on_path(const std::string& command, const std::string& path_var);

} // namespace tandem::k8s::detail
