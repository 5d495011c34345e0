#pragma once
// A job's output file read over SFTP (RemoteHost::read with offsets), for Slurm clusters reached by SSH.
// Following polls: it waits while the file does not exist yet (a pending job), reads what was appended,
// starts over when the file shrank (a requeued job writes it anew), and stops once `ended()` said the job
// is over and what it wrote has been read. A dropped connection is reconnected (a few tries, with
// backoff); when that fails the error says so and how to pick up again. Every read has the transport's
// deadline, so nothing waits forever.

#include <chrono>
#include <functional>
#include <string>

#include "core/backend.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

struct RemoteLogTarget {
    std::string cluster; // for errors
    std::int64_t job_id = 0;
    std::string path;
    int num_nodes = 1;
};

// `ended()`: whether the job has reached a terminal state (an error counts as a lost connection).
Status stream_remote_log(net::RemoteHost& host, const RemoteLogTarget& target, const LogOptions& options,
                         const LogSink& sink, const std::function<Result<bool>()>& ended,
                         std::chrono::milliseconds poll = std::chrono::milliseconds(500));

} // namespace tandem::slurm
