#pragma once
// One thread per cluster. `infra`, `plan`, `launch` and `status` ask every cluster at once, so a command
// costs the slowest cluster's round trips, not the sum; each cluster has a deadline, so one that hangs
// past its own timeouts is reported as such while the others' answers are still shown.

#include <chrono>
#include <functional>
#include <vector>

namespace tandem::app {

struct FanoutTask {
    // Runs on a thread of its own. It must write its result only through what it owns (a shared_ptr
    // it captured): a task still running at its deadline is left behind, and the caller moves on.
    std::function<void()> run;
    std::chrono::steady_clock::duration deadline = std::chrono::seconds(60);
};

// Runs every task concurrently (a single task on this thread) and returns, per task, whether it finished
// before its deadline. A task left behind may still be running when the command ends; the process ends
// with std::_Exit (cli/app.cpp), so no static destructor runs under it.
std::vector<bool> run_fanout(std::vector<FanoutTask> tasks);

} // namespace tandem::app
