#pragma once
// Following jobs without a change feed: refresh() every 2 s until the sink has seen enough. What
// `status -w` does on a backend without the Watch capability, and what Kubernetes' watch falls back to
// when the jobs span namespaces.

#include <vector>

#include "core/backend.hpp"

namespace tandem::backends {

Status poll_jobs(Backend& backend, const std::vector<JobRecord>& jobs, const WatchSink& sink);

// The backend's change feed where it offers one (core/capabilities.hpp, Watch); else poll_jobs.
Status watch_jobs(Backend& backend, const std::vector<JobRecord>& jobs, const WatchSink& sink);

} // namespace tandem::backends
