#include "app/fanout.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace tandem::app {

namespace {

// Shared by the waiting thread and the workers, so a worker that outlives the wait still has it.
struct Progress {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<bool> done;
};

} // namespace

std::vector<bool> run_fanout(std::vector<FanoutTask> tasks) {
    if (tasks.size() == 1) {
        // One cluster: nothing to overlap, and its own timeouts bound the call.
        tasks.front().run();
        return {true};
    }
    auto progress = std::make_shared<Progress>();
    progress->done.assign(tasks.size(), false);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        std::thread([progress, i, run = std::move(tasks[i].run)] {
            run();
            std::lock_guard lock(progress->mutex);
            progress->done[i] = true;
            progress->changed.notify_all();
        }).detach();
    }
    std::unique_lock lock(progress->mutex);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        progress->changed.wait_until(lock, start + tasks[i].deadline, [&] { return progress->done[i]; });
    }
    return progress->done;
}

} // namespace tandem::app
