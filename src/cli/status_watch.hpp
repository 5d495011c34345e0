#pragma once
// `tandem status -w`: after the table, one line per change of a listed job (like `kubectl get -w`), until
// every listed job has ended. Each cluster is followed by its backend's watch() in a thread of its own
// (Kubernetes through the watch API, the others by polling), changes are stored as a refresh stores them.

#include <functional>
#include <string>
#include <vector>

#include "cli/context.hpp"

namespace tandem::cli {

// Called (under a lock) with each job whose state, reason or exit code changed.
using ChangePrinter = std::function<void(const JobView&)>;

// Returns once every job in `views` is terminal, or with the first backend error when a cluster cannot
// be followed (its jobs are then shown as UNKNOWN by the printer first).
Status watch_jobs(Context& ctx, std::vector<JobView> views, const ChangePrinter& print);

} // namespace tandem::cli
