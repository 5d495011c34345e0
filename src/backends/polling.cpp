#include "backends/polling.hpp"

#include <chrono>
#include <thread>

namespace tandem::backends {

Status poll_jobs(Backend& backend, const std::vector<JobRecord>& jobs, const WatchSink& sink) {
    for (;;) {
        auto updates = backend.refresh(jobs);
        if (!updates) {
            return tl::unexpected(updates.error());
        }
        if (!sink(*updates)) {
            return {};
        }
        std::this_thread::sleep_for(std::chrono::seconds(2));
    }
}

Status watch_jobs(Backend& backend, const std::vector<JobRecord>& jobs, const WatchSink& sink) {
    if (Watch* feed = backend.capabilities().watch) {
        return feed->watch(jobs, sink);
    }
    return poll_jobs(backend, jobs, sink);
}

} // namespace tandem::backends
