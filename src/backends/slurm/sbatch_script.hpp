#pragma once
// The sbatch script of a task: the one native artifact of a Slurm job, whichever way it is submitted
// (sbatch over SSH reads its #SBATCH lines; slurmrestd ignores them and takes the same options from the
// REST payload) and what `tandem plan` shows. Targets Slurm 22.05 and later.
//
// The body exports the task's environment (never its secrets: those travel only in the submitted job
// environment), then runs `srun` with one task per node. Each node gets TANDEM_NODE_RANK (= SLURM_NODEID,
// the node's index in the job's node list, so rank 0 is the first of TANDEM_NODE_IPS), runs setup, then
// run only if setup exited 0, and exits with run's code (or setup's); srun waits for every node
// (--kill-on-bad-exit=0) and the job exits with the highest node's code. srun --label prefixes each
// output line with the node's rank (see rank_output.hpp for how `logs` reads that back). The user's setup and
// run are embedded verbatim: a quoted here-document with a delimiter that does not occur in the text, or a
// single-quoted string when the text holds a CR (sbatch refuses scripts with CR LF).

#include <cstddef>
#include <string>

#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"
#include "core/spec.hpp"

namespace tandem::slurm {

// Largest setup or run text: each reaches the nodes as one srun argument, and Linux caps a single
// argument at 128 KiB (MAX_ARG_STRLEN).
inline constexpr std::size_t k_max_script_bytes = std::size_t{120} * 1024;

// An `invalid_spec` error when a value cannot be written safely: a line break in an #SBATCH value, a NUL
// anywhere, an environment name bash cannot export, a setup/run over k_max_script_bytes, or a missing
// time limit (the script never asks for UNLIMITED).
Result<std::string> render_sbatch_script(const TaskSpec& spec, const SubmitPlan& plan);

// "D-HH:MM:SS", the form sbatch --time takes; minutes > 0.
std::string format_time_limit(int minutes);

} // namespace tandem::slurm
