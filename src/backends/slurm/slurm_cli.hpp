#pragma once
// Slurm's command-line tools as the SSH backend drives them: the exact command lines (every word quoted
// with shell_quote, nothing user-supplied unquoted) and parsers of what they print. Targets Slurm 22.05
// through 24.x: no `squeue --only-job-state` (23.11.5+) and no --json (22.05's squeue ignores filters
// with it). Fields are separated by the ASCII unit separator (0x1F), which no job name, comment, state
// or node list on the testbed contains; the one free-text field (job name or comment) comes last, so
// even one that holds 0x1F cannot shift the others. Times are printed as Unix seconds
// (SLURM_TIME_FORMAT=%s), so the login node's time zone does not matter.
//
// Parsers are strict: a line that does not have the expected shape is a `remote` error quoting the line,
// never a guess.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"

namespace tandem::slurm::cli {

inline constexpr char k_sep = '\x1f';

// A shell command line: each word shell_quote'd, joined by spaces.
std::string command_line(const std::vector<std::string>& words);

// `sbatch --parsable` reading the script from stdin, run by bash so that the secrets, sent first on
// stdin as NUL-terminated values in the order of `secret_names`, are read into the environment sbatch
// passes to the job (--export=ALL) and never appear on a command line or in the script.
std::string sbatch_command(const std::vector<std::string>& secret_names);
// The stdin for sbatch_command: each secret value NUL-terminated, then the script.
std::string sbatch_input(const std::vector<std::string>& secret_values, std::string_view script);

// `tandem exec` / `tandem shell` beside a running job: a job step on one node of its allocation that
// shares its resources (--overlap, Slurm 20.11+), with a pseudo-terminal for a shell. An empty `command`
// is the user's login shell.
std::string srun_beside_command(const std::string& job_id, const std::string& node, bool tty,
                                const std::vector<std::string>& command);

// One squeue call for the given Slurm job ids (all states, so ended jobs still held are seen).
std::string squeue_command(const std::vector<std::string>& job_ids);
// Every job of the calling user with its comment, to find a submit by its token.
std::string squeue_comments_command();
// Discovery (issue 31), one round trip: the user's name (id -un), every job of the user (squeue --me),
// and with `all_users` a marker line and every job of the queue.
std::string discover_command(bool all_users);
inline constexpr std::string_view k_discover_marker = "tandem-everyone";
Result<SlurmListing> parse_discover(std::string_view out);
// One sacct call (allocations only) for the given ids.
std::string sacct_command(const std::vector<std::string>& job_ids);
std::string scancel_command(const std::string& job_id);
// Nodes, a marker line, then partitions: one round trip for the inventory.
std::string sinfo_command();
inline constexpr std::string_view k_sinfo_marker = "tandem-partitions";
std::string version_command(); // sinfo --version; sbatch --version

// "123" or "123;cluster" (with a trailing newline): the job id.
Result<std::string> parse_sbatch_parsable(std::string_view out);
// Lines of squeue_command.
Result<std::vector<SlurmJob>> parse_squeue(std::string_view out);
// The id of the job whose comment is `token`, from squeue_comments_command's output.
std::optional<std::string> find_comment(std::string_view out, std::string_view token);
// Lines of sacct_command.
Result<std::vector<SlurmJob>> parse_sacct(std::string_view out);
// MaxArraySize from `scontrol show config` ("MaxArraySize            = 1001"); nullopt when not there.
// A job array's indexes must be below it.
std::optional<int> parse_max_array_size(std::string_view out);
// Both halves of sinfo_command's output.
struct SinfoView {
    std::vector<SlurmNode> nodes;
    std::vector<SlurmPartition> partitions;
};
Result<SinfoView> parse_sinfo(std::string_view out);
// "slurm-wlm 22.05.8" / "slurm 23.11.4" -> "22.05.8".
Result<std::string> parse_version(std::string_view out);

// A Slurm time limit as sinfo prints it: "1-00:00:00", "30:00", "UNLIMITED"/"infinite" (nullopt).
Result<std::optional<int>> parse_limit_minutes(std::string_view text);

} // namespace tandem::slurm::cli
