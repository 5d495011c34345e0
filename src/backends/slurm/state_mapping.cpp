// Slurm job states -> tandem's state model, for every API version and the CLI. Slurm reports a base
// state (PENDING, RUNNING, ..., OUT_OF_MEMORY) plus flags (COMPLETING, CONFIGURING, REQUEUED, ...).
// v0.0.40+ give both as one array; v0.0.38 (and squeue) give one string, which is the most telling flag
// when one is set (job_state_string() checks the flags first) and the base state otherwise. So every
// name below may arrive as SlurmJob::state or among SlurmJob::state_flags.
//
// Decisions (the whole table is `k_base` and `k_overriding` below):
// - COMPLETING is RUNNING: the script has ended but epilogs still hold the nodes and the output may not
//   be complete; the final state follows within seconds.
// - SUSPENDED and STOPPED are RUNNING with that reason: the job keeps its allocation and resumes; tandem
//   has no paused state and neither is an ending.
// - REQUEUED (and REQUEUE_HOLD/REQUEUE_FED, RESV_DEL_HOLD, SPECIAL_EXIT) are PENDING: Slurm puts the job
//   back in the queue, so a terminal state would be a lie the store could never correct.
// - A failure Slurm caused (TIMEOUT, NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE) carries no exit code: the
//   signal that ended the script is Slurm's, not the job's. FAILED and OUT_OF_MEMORY carry the script's
//   exit code, or 128 + signal when a signal ended it (what bash reports, as the local backend does).

#include <array>

#include <fmt/format.h>

#include "core/job_recovery.hpp"

#include "backends/slurm/slurm_model.hpp"

namespace tandem::slurm {

namespace {

enum class ExitUse {
    none, // no exit code: still running, or the ending was Slurm's doing
    zero, // success
    own,  // the batch script's own exit code (or 128 + signal)
};

struct Row {
    std::string_view name;
    JobState state;
    std::string_view reason; // empty: built from the job (pending reason, exit code)
    ExitUse exit;
};

// Base states (JOB_STATE_BASE in slurm.h).
constexpr std::array<Row, 12> k_base{{
    {"PENDING", JobState::pending, "", ExitUse::none},
    {"RUNNING", JobState::running, "", ExitUse::none},
    {"SUSPENDED", JobState::running, "suspended", ExitUse::none},
    {"COMPLETED", JobState::succeeded, "exit code 0", ExitUse::zero},
    {"CANCELLED", JobState::cancelled, "cancelled", ExitUse::none},
    {"FAILED", JobState::failed, "", ExitUse::own},
    {"TIMEOUT", JobState::failed, "timeout", ExitUse::none},
    {"NODE_FAIL", JobState::failed, "node failure", ExitUse::none},
    {"PREEMPTED", JobState::failed, "preempted", ExitUse::none},
    {"BOOT_FAIL", JobState::failed, "node boot failure", ExitUse::none},
    {"DEADLINE", JobState::failed, "deadline reached before the job could end", ExitUse::none},
    {"OUT_OF_MEMORY", JobState::failed, "out of memory", ExitUse::own},
}};

// Flags that decide the state whatever the base, most telling first.
constexpr std::array<Row, 11> k_overriding{{
    {"REQUEUED", JobState::pending, "requeued", ExitUse::none},
    {"REQUEUE_HOLD", JobState::pending, "requeued and held", ExitUse::none},
    {"REQUEUE_FED", JobState::pending, "requeued by the federation", ExitUse::none},
    {"RESV_DEL_HOLD", JobState::pending, "held: its reservation was deleted", ExitUse::none},
    {"SPECIAL_EXIT", JobState::pending, "requeued and held after a special exit code", ExitUse::none},
    {"REVOKED", JobState::failed, "revoked: the federation runs it on another cluster", ExitUse::none},
    {"CONFIGURING", JobState::starting, "configuring nodes", ExitUse::none},
    {"POWER_UP_NODE", JobState::starting, "powering up nodes", ExitUse::none},
    {"COMPLETING", JobState::running, "completing", ExitUse::none},
    {"STAGE_OUT", JobState::running, "staging out", ExitUse::none},
    {"STOPPED", JobState::running, "stopped", ExitUse::none},
}};

// Flags that only qualify a running job; they matter only when v0.0.38 gives one as the whole state.
constexpr std::array<Row, 2> k_alone{{
    {"SIGNALING", JobState::running, "signaling", ExitUse::none},
    {"RESIZING", JobState::running, "resizing", ExitUse::none},
}};

template <std::size_t N> const Row* find(const std::array<Row, N>& rows, std::string_view name) {
    for (const auto& r : rows) {
        if (r.name == name) {
            return &r;
        }
    }
    return nullptr;
}

const Row* classify(const SlurmJob& job) {
    for (const auto& r : k_overriding) {
        if (job.state == r.name) {
            return &r;
        }
        for (const auto& f : job.state_flags) {
            if (f == r.name) {
                return &r;
            }
        }
    }
    if (const Row* r = find(k_base, job.state)) {
        return r;
    }
    return find(k_alone, job.state);
}

std::string_view signal_name(int sig) {
    // Linux numbering, which is what Slurm clusters run.
    static constexpr std::array<std::string_view, 32> names{
        "",          "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
        "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
        "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
        "SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS"};
    return sig > 0 && sig < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(sig)] : "";
}

bool informative(const std::string& reason) {
    return !reason.empty() && reason != "None";
}

// The script's own ending: exit code N, or 128 + N for signal N.
std::optional<int> own_exit_code(const SlurmJob& job) {
    if (job.signal && *job.signal > 0) {
        return 128 + *job.signal;
    }
    if (job.exit_code && *job.exit_code > 0) {
        return job.exit_code;
    }
    return std::nullopt;
}

std::string failed_reason(const SlurmJob& job) {
    if (job.signal && *job.signal > 0) {
        const auto name = signal_name(*job.signal);
        return name.empty() ? fmt::format("killed by signal {}", *job.signal)
                            : fmt::format("killed by signal {} ({})", *job.signal, name);
    }
    if (job.exit_code && *job.exit_code > 0) {
        return fmt::format("exit code {}", *job.exit_code);
    }
    if (informative(job.state_reason) && job.state_reason != "NonZeroExitCode") {
        return "failed: " + job.state_reason;
    }
    return "failed (Slurm did not report the exit code)";
}

} // namespace

JobUpdate to_job_update(const SlurmJob& job) {
    JobUpdate u;
    const Row* row = classify(job);
    if (row == nullptr) {
        u.state = JobState::unknown;
        u.reason = fmt::format("unrecognised Slurm job state '{}'", job.state);
        return u;
    }
    u.state = row->state;
    u.reason = std::string(row->reason);
    if (u.state == JobState::pending && u.reason.empty()) {
        u.reason = informative(job.state_reason) ? job.state_reason : "queued";
    } else if (u.state == JobState::pending && informative(job.state_reason)) {
        u.reason += " (" + job.state_reason + ")";
    }
    if (u.state == JobState::pending && job.restarts > 0) {
        // Back in the queue after a node failure or preemption (--requeue): Slurm holds it for its requeue
        // delay (BeginTime) before it may start again.
        u.reason = fmt::format("requeued, restart {}: {}", job.restarts, u.reason);
    }
    switch (row->exit) {
    case ExitUse::zero:
        u.exit_code = 0;
        break;
    case ExitUse::own:
        u.exit_code = own_exit_code(job);
        if (u.reason.empty()) {
            u.reason = failed_reason(job);
        } else if (u.exit_code) {
            u.reason += fmt::format(" ({})", failed_reason(job));
        }
        break;
    case ExitUse::none:
        break;
    }

    // Recoveries the job recorded in its comment (sbatch_script.cpp's tandem_recovered).
    if (const auto at = job.comment.find(k_recovered_marker); at != std::string::npos) {
        const auto from = at + k_recovered_marker.size();
        const auto word = std::string_view(job.comment).substr(from, job.comment.find(' ', from) - from);
        u.recoveries = format_recoveries(parse_recoveries(word));
    }

    const bool terminal = is_terminal(u.state);
    // A pending job's start_time is Slurm's estimate; a job cancelled while pending gets start = end =
    // the cancel time and no nodes. Neither is a start.
    const bool never_ran = u.state == JobState::cancelled && job.nodes.empty();
    if ((u.state == JobState::running || terminal) && !never_ran) {
        u.started_at = job.start_time;
    }
    // A running job's end_time is its time limit.
    if (terminal) {
        u.ended_at = job.end_time;
    }
    return u;
}

JobUpdate left_slurmctld(const std::string& slurm_id, bool cluster_has_accounting) {
    JobUpdate u;
    u.state = JobState::unknown;
    u.reason = cluster_has_accounting
                   ? fmt::format("Slurm job {} has left slurmctld and accounting has no record of it", slurm_id)
                   : fmt::format("Slurm job {} has ended and left slurmctld; the cluster keeps no accounting "
                                 "(no slurmdbd), so how it ended is unknown",
                                 slurm_id);
    return u;
}

} // namespace tandem::slurm
