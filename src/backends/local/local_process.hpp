#pragma once
// Process plumbing for the local backend: start a detached job in its own session and process group,
// tell whether it still runs (pid reuse guarded by the kernel's start time), and signal its group.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace tandem::local {

struct ProcessId {
    int pid = 0;
    std::uint64_t start_ticks = 0; // /proc/PID/stat field 22: tells a reused pid apart
};

struct SpawnRequest {
    std::vector<std::string> argv;
    std::vector<std::string> env; // "K=V", the whole environment of the job
    std::string cwd;
    std::string log_file; // stdout and stderr, appended
};

// Double-forks so the job is reparented away from the CLI at once and outlives it. The job leads a
// new session, so its pid is also its process group id.
Result<ProcessId> spawn_detached(const SpawnRequest& request);

// Whether the process still runs (not a zombie) and is the one we started.
bool is_alive(const ProcessId& id);
std::optional<std::uint64_t> start_ticks_of(int pid);

// Any live (non-zombie) member left in process group `pgid`.
bool group_alive(int pgid);

// TERM to the group, KILL after `grace` if anything is left. Returns whether KILL was needed.
bool terminate_group(int pgid, std::chrono::milliseconds grace);

} // namespace tandem::local
