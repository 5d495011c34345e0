#pragma once
// Reading a job's output file where tandem can see it: the local backend's output.log, or a Slurm job's
// output on a shared filesystem. Following polls the file, so it works on NFS and for files that do not
// exist yet (a pending job).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "core/backend.hpp"

namespace tandem::backends {

// Byte offset where the last `lines` lines of `file` begin.
std::uintmax_t tail_offset(const std::string& file, int lines);

// Writes `file` to `sink` (from the last N lines with tail_lines). With follow, keeps writing what is
// appended until `ended()` says the job is over, then writes what is left. Without follow, a missing file
// is not_found.
Status stream_file(const std::string& file, const LogOptions& options, const LogSink& sink,
                   const std::function<bool()>& ended,
                   std::chrono::milliseconds poll = std::chrono::milliseconds(100));

} // namespace tandem::backends
