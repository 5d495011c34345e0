// Rendering of the sbatch script (the model is described in sbatch_script.hpp).

#include "backends/slurm/sbatch_script.hpp"

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>

#include "backends/slurm/job_array.hpp"
#include "backends/slurm/script_quoting.hpp"
#include "backends/slurm/submit_plan.hpp"
#include "backends/upload/mount_script.hpp"
#include "core/git_checkout.hpp"
#include "core/job_group.hpp"

namespace tandem::slurm {

namespace {

// Runs on every node, as `bash -c "$tandem_node" tandem-node SETUP RUN`. Fixed text: no user input.
constexpr std::string_view k_node_rank =
    R"(export TANDEM_NODE_RANK="$SLURM_NODEID" SKYPILOT_NODE_RANK="$SLURM_NODEID"
)";

// With a git workdir, each node clones it into a directory of its own under the submitting user's home
// (~/.tandem/workdirs/<submit token>/rank-K: nodes may or may not share the filesystem) and runs there.
constexpr std::string_view k_node_git =
    R"(tandem_git_checkout "$TANDEM_GIT_DIR/rank-$SLURM_NODEID" || exit $?
cd "$TANDEM_GIT_DIR/rank-$SLURM_NODEID" || exit 1
)";

constexpr std::string_view k_node_program =
    R"(rc=0
if [ -n "$1" ]; then /bin/bash -c "$1" tandem-setup; rc=$?; fi
if [ "$rc" -eq 0 ] && [ -n "$2" ]; then /bin/bash -c "$2" tandem-run; rc=$?; fi
exit "$rc")";

// TANDEM_NODE_IPS / SKYPILOT_NODE_IPS: one address per node in rank order (SLURM_NODEID follows
// `scontrol show hostnames`), each the node's NodeAddr (where slurmctld itself reaches it), resolved to an
// IPv4 address where it is a name, as SkyPilot documents the variable: a node *name* often resolves
// nowhere but in slurm.conf, and a framework given it (torchrun's --master_addr) retries forever. A node
// slurmctld says nothing of keeps its name.
constexpr std::string_view k_shared_variables =
    R"(export TANDEM_NUM_NODES="$SLURM_JOB_NUM_NODES" SKYPILOT_NUM_NODES="$SLURM_JOB_NUM_NODES"
if ! tandem_hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST"); then
    echo "tandem: 'scontrol show hostnames' failed; TANDEM_NODE_IPS is the raw node list" >&2
    tandem_hosts=$SLURM_JOB_NODELIST
fi
tandem_nodes=$(scontrol -o show node "$SLURM_JOB_NODELIST" 2>/dev/null)
TANDEM_NODE_IPS=
for tandem_h in $tandem_hosts; do
    tandem_a=$(printf '%s\n' "$tandem_nodes" | awk -v n="NodeName=$tandem_h" \
        '$1 == n { for (i = 2; i <= NF; i++) if ($i ~ /^NodeAddr=./) { print substr($i, 10); exit } }')
    case ${tandem_a:=$tandem_h} in
    *[!0-9.]*) tandem_r=$(getent ahostsv4 "$tandem_a" 2>/dev/null | awk 'NR == 1 { print $1 }')
        tandem_a=${tandem_r:-$tandem_a} ;;
    esac
    TANDEM_NODE_IPS=${TANDEM_NODE_IPS:+$TANDEM_NODE_IPS$'\n'}$tandem_a
done
export TANDEM_NODE_IPS SKYPILOT_NODE_IPS="$TANDEM_NODE_IPS"
)";

// Names the script sets itself; an entry of the plan's environment with one of them is not repeated.
constexpr std::array<std::string_view, 11> k_own_names{
    "TANDEM_JOB_ID",      "TANDEM_JOB_NAME",   "TANDEM_NUM_GPUS_PER_NODE", "TANDEM_NUM_NODES",
    "TANDEM_NODE_IPS",    "TANDEM_NODE_RANK",  "SKYPILOT_TASK_ID",         "SKYPILOT_NUM_GPUS_PER_NODE",
    "SKYPILOT_NUM_NODES", "SKYPILOT_NODE_IPS", "SKYPILOT_NODE_RANK",
};

bool is_own_name(std::string_view name) {
    return std::find(k_own_names.begin(), k_own_names.end(), name) != k_own_names.end();
}

tl::unexpected<Error> refuse(std::string message) {
    return fail(ErrorKind::invalid_spec, "slurm: " + std::move(message));
}

bool has_nul(std::string_view s) {
    return s.find('\0') != std::string_view::npos;
}

Status add_directive(std::string& out, std::string_view option, std::string_view value) {
    const auto quoted = sbatch_value(value);
    if (!quoted) {
        return refuse(fmt::format("{} '{}' cannot be written on an #SBATCH line (a line break, a NUL or "
                                  "\"packjob\", which sbatch erases)",
                                  option, value));
    }
    out += fmt::format("#SBATCH {}={}\n", option, *quoted);
    return {};
}

Result<std::string> directives(const SubmitPlan& plan) {
    std::vector<std::pair<std::string, std::string>> d;
    auto optional = [&](const char* option, std::string_view v) {
        if (!v.empty()) {
            d.emplace_back(option, std::string(v));
        }
    };
    auto value_of = [](const std::optional<std::string>& v) {
        return v ? std::string_view(*v) : std::string_view();
    };
    optional("--job-name", plan.job_name);
    optional("--partition", plan.partition);
    d.emplace_back("--nodes", std::to_string(plan.nodes));
    d.emplace_back("--ntasks-per-node", "1");
    if (plan.gpus_per_node > 0) {
        d.emplace_back("--gres", plan.gres_type.empty()
                                     ? fmt::format("gpu:{}", plan.gpus_per_node)
                                     : fmt::format("gpu:{}:{}", plan.gres_type, plan.gpus_per_node));
    }
    if (plan.cpus_per_task) {
        d.emplace_back("--cpus-per-task", std::to_string(*plan.cpus_per_task));
    }
    if (plan.memory_mb_per_node) {
        d.emplace_back("--mem", fmt::format("{}M", *plan.memory_mb_per_node));
    }
    if (plan.tmp_disk_mb) {
        d.emplace_back("--tmp", fmt::format("{}M", *plan.tmp_disk_mb));
    }
    if (plan.time_limit_minutes) {
        d.emplace_back("--time", format_time_limit(*plan.time_limit_minutes));
    }
    optional("--account", value_of(plan.account));
    optional("--qos", value_of(plan.qos));
    optional("--constraint", value_of(plan.constraint));
    optional("--output", plan.output_pattern);
    optional("--error", plan.output_pattern);
    const std::string comment = job_comment(plan);
    optional("--comment", comment);
    optional("--chdir", plan.working_directory);

    std::string out;
    if (plan.sweep) {
        // One array task per element, at most `parallel` at once (sbatch's %).
        out += fmt::format("#SBATCH --array={}\n", array_range(*plan.sweep));
    }
    if (plan.recovery) {
        // resources.job_recovery: a node failure or preemption requeues the job (as JobRequeue and the
        // partition allow), and every attempt's output is kept in the one file.
        out += "#SBATCH --requeue\n#SBATCH --open-mode=append\n";
    }
    for (const auto& [name, value] : plan.extra_options) { // config.slurm.sbatch_options
        if (value.empty()) {
            out += fmt::format("#SBATCH --{}\n", name);
        } else if (auto ok = add_directive(out, "--" + name, value); !ok) {
            return tl::unexpected(ok.error());
        }
    }

    for (const auto& [option, value] : d) {
        if (auto ok = add_directive(out, option, value); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    return out;
}

Result<std::string> exports(const TaskSpec& spec, const SubmitPlan& plan) {
    std::set<std::string, std::less<>> secrets;
    for (const auto& [name, value] : spec.secrets) {
        secrets.insert(name);
    }
    std::string out;
    for (const auto& [name, value] : plan.environment) {
        if (!is_shell_name(name)) {
            return refuse(fmt::format("environment variable name '{}' is not a shell name", name));
        }
        if (has_nul(value)) {
            return refuse(fmt::format("the value of {} contains a NUL byte", name));
        }
        if (secrets.count(name) > 0 || is_own_name(name)) {
            continue;
        }
        out += fmt::format("export {}={}\n", name, shell_quote(value));
    }
    return out;
}

// A sweep: the element's values by its index in the array (values single-quoted, never on sbatch's
// command line), and what every element sees of the sweep.
Result<std::string> sweep_block(const Sweep& sweep) {
    auto block = sweep_shell_block(sweep, "${SLURM_ARRAY_TASK_ID:-0}");
    if (!block) {
        return refuse("sweep: " + block.error());
    }
    return fmt::format("# The sweep: {} elements, one per array task; this one's values by its index.\n{}",
                       sweep.size(), *block);
}

// `name`=the text, verbatim. A quoted here-document keeps it readable in `tandem plan`; a text with a CR
// (which sbatch would refuse in the script) becomes one single-quoted word instead.
std::string embed(std::string_view variable, std::string_view text, std::string_view delimiter_base) {
    if (text.empty()) {
        return fmt::format("{}=''\n", variable);
    }
    if (text.find('\r') != std::string_view::npos) {
        return fmt::format("{}={}\n", variable, shell_quote(text));
    }
    // The here-document ends with a newline of its own, which the last line strips again: the text's
    // own trailing newlines (or their absence) survive exactly.
    const std::string delimiter = heredoc_delimiter(text, delimiter_base);
    return fmt::format("IFS= read -r -d '' {0} <<'{1}'\n{2}\n{1}\n{0}=${{{0}%$'\\n'}}\n", variable, delimiter,
                       text);
}

Status check_user_script(std::string_view field, std::string_view text) {
    if (has_nul(text)) {
        return refuse(fmt::format("{} contains a NUL byte", field));
    }
    if (text.size() > k_max_script_bytes) {
        return refuse(fmt::format("{} is {} bytes; the Slurm backend hands it to every node as one srun "
                                  "argument, which Linux limits to 128 KiB: move the bulk into a file in "
                                  "workdir",
                                  field, text.size()));
    }
    return {};
}

// The recovery loop of a job with resources.job_recovery (see render_sbatch_script). The comment word
// tandem-recovered=EVENTS (core/job_recovery.hpp) survives a requeue, so the restarts already used and
// the node failures already counted are read back from it when the script starts again.
constexpr std::string_view k_recovery_functions = R"sh(tandem_recovered_events() {
  local comment w
  comment=$(squeue -h -j "$SLURM_JOB_ID" -o %k 2>/dev/null) || return 0
  set -f
  for w in $comment; do
    case $w in tandem-recovered=*) printf '%s' "${w#tandem-recovered=}" ;; esac
  done
  set +f
}
tandem_recovered() { # EVENT: appended to the comment's tandem-recovered word
  local comment w rest="" events
  comment=$(squeue -h -j "$SLURM_JOB_ID" -o %k 2>/dev/null) || return 0
  set -f
  for w in $comment; do
    case $w in tandem-recovered=*) events=${w#tandem-recovered=} ;; *) rest="$rest${rest:+ }$w" ;; esac
  done
  set +f
  # The word goes before the group's address book (tandem-hosts=), which tandem replaces as a whole.
  local word="tandem-recovered=${events:+$events,}$1" before=${rest%% tandem-hosts=*}
  if [[ $before != "$rest" ]]; then
    rest="$before $word ${rest#"$before "}"
  else
    rest="$rest $word"
  fi
  scontrol update JobId="$SLURM_JOB_ID" Comment="$rest" >/dev/null 2>&1 || true
}
tandem_recover_loop() {
  local events used=0 nodes=0 e rc attempt=1 uncounted=0
  events=$(tandem_recovered_events)
  for e in ${events//,/ }; do
    case $e in x*) used=$((used + 1)) ;; n) nodes=$((nodes + 1)) ;; esac
    attempt=$((attempt + 1))
  done
  if (( ${SLURM_RESTART_COUNT:-0} > nodes )); then
    echo "tandem: attempt $((attempt + 1)): the job was requeued (node failure or preemption), running again"
    tandem_recovered n
    attempt=$((attempt + 1))
  else
    echo "tandem: attempt $attempt"
  fi
  while :; do
    tandem_attempt
    rc=$?
    (( rc == 0 )) && return 0
    attempt=$((attempt + 1))
    if [[ $tandem_recover_codes == *" $rc "* ]] && (( uncounted < 100 )); then
      uncounted=$((uncounted + 1))
      echo "tandem: attempt $attempt: exit code $rc is in recover_on_exit_codes, running again (not counted)"
      tandem_recovered "c$rc"
    elif (( used < tandem_max_restarts )); then
      used=$((used + 1))
      echo "tandem: attempt $attempt: exit code $rc, restart $used of $tandem_max_restarts"
      tandem_recovered "x$rc"
    else
      (( tandem_max_restarts > 0 )) && echo "tandem: exit code $rc and no restart left ($used of $tandem_max_restarts used)"
      return $rc
    fi
  done
}
)sh";

} // namespace

std::string format_time_limit(int minutes) {
    return fmt::format("{}-{:02}:{:02}:00", minutes / (24 * 60), (minutes / 60) % 24, minutes % 60);
}

Result<std::string> render_sbatch_script(const TaskSpec& spec, const SubmitPlan& plan) {
    if (plan.time_limit_minutes && *plan.time_limit_minutes <= 0) {
        return fail(ErrorKind::internal, "slurm: a submit plan's time limit must be positive");
    }
    if (plan.nodes < 1 || plan.gpus_per_node < 0) {
        return fail(ErrorKind::internal, "slurm: a submit plan needs nodes >= 1 and gpus_per_node >= 0");
    }
    for (const auto& [field, text] :
         {std::pair<std::string_view, std::string_view>{"setup", spec.setup}, {"run", spec.run}}) {
        if (auto ok = check_user_script(field, text); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    auto head = directives(plan);
    if (!head) {
        return tl::unexpected(head.error());
    }
    auto env = exports(spec, plan);
    if (!env) {
        return tl::unexpected(env.error());
    }

    std::string s = "#!/bin/bash\n" + *head;
    s +=
        fmt::format("#\n# tandem job {}: setup, then run, on every node of the allocation (one srun task per "
                    "node).\n",
                    plan.tandem_id);
    if (!plan.time_limit_minutes && !plan.time_limit_note.empty()) {
        s += fmt::format("# No --time: the task sets no config.slurm.time, so Slurm applies {}.\n",
                         plan.time_limit_note);
    }
    s += "\n";
    s += "# slurmrestd starts the script with only the submitted environment: fill in the login basics.\n"
         "export PATH=\"${PATH:-/usr/local/bin:/usr/bin:/bin}\"\n"
         "export USER=\"${USER:-$(id -un)}\"\n"
         "export HOME=\"${HOME:-$(getent passwd \"$USER\" | cut -d: -f6)}\"\n\n";
    if (!env->empty()) {
        s += "# The task's environment. Secrets are not written here: they come in the job's environment.\n";
        s += *env + "\n";
    }
    if (plan.sweep) {
        auto block = sweep_block(*plan.sweep);
        if (!block) {
            return tl::unexpected(block.error());
        }
        s += *block + "\n";
    }
    s += "# The same variables on every backend; the node rank is set on each node below.\n";
    s += fmt::format("export TANDEM_JOB_ID={0} TANDEM_JOB_NAME={1} SKYPILOT_TASK_ID={2}\n",
                     shell_quote(std::to_string(plan.tandem_id)), shell_quote(plan.job_name),
                     shell_quote(fmt::format("tandem-{}-{}", plan.tandem_id, plan.job_name)));
    s += fmt::format("export TANDEM_NUM_GPUS_PER_NODE={0} SKYPILOT_NUM_GPUS_PER_NODE={0}\n",
                     shell_quote(std::to_string(plan.gpus_per_node)));
    s += k_shared_variables;
    s += "\n# The task's setup and run, verbatim: nothing in them is expanded here.\n";
    s += embed("tandem_setup", spec.setup, "TANDEM_SETUP_EOF");
    s += embed("tandem_run", spec.run, "TANDEM_RUN_EOF");
    s += "\n# On each node: its rank, setup, then run only if setup exited 0. srun waits for every node and\n"
         "# exits with the highest exit code, so the job's is run's (or setup's) even when all nodes fail "
         "alike.\n";
    std::string node(k_node_rank);
    if (!plan.file_mounts.empty()) {
        node += upload::mount_copy_function();
        for (const auto& m : plan.file_mounts) {
            node += fmt::format("tandem_mount {} {} {} || exit 1\n", shell_quote(m.source), shell_quote(m.destination),
                                m.single_file ? "file" : "dir");
        }
    }
    if (!spec.group_channel.empty()) {
        // A job group member: every node waits for the group's addresses, which tandem writes to the
        // shared home once every member has its nodes (core/job_group.hpp).
        if (plan.group_book_in_comment) { // each node keeps its own copy, read from the job's comment
            s += fmt::format("export TANDEM_GROUP_BOOK=\"${{TMPDIR:-/tmp}}/\"{}\n", shell_quote(spec.group_channel));
            node += group_fetch_from_slurm_comment_function();
            node += "TANDEM_GROUP_BOOK=\"$TANDEM_GROUP_BOOK-$SLURM_NODEID-$SLURM_JOB_ID.env\"\n";
        } else {
            s += fmt::format("export TANDEM_GROUP_BOOK=\"$HOME/.tandem/groups/\"{}.env\n",
                             shell_quote(spec.group_channel));
        }
        node += group_wait_function();
        node += "tandem_group_wait \"$TANDEM_GROUP_BOOK\" || exit $?\n";
    }
    if (spec.git_workdir) {
        s += fmt::format("export TANDEM_GIT_DIR=\"$HOME/.tandem/workdirs/\"{}\n", shell_quote(plan.submit_token));
        node += git_checkout_function();
        node += k_node_git;
    }
    node += k_node_program;
    s += fmt::format("tandem_node={}\n", shell_quote(node));
    s += "srun --export=ALL --nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks=\"$SLURM_JOB_NUM_NODES\" "
         "--ntasks-per-node=1";
    if (plan.cpus_per_task) { // srun does not inherit --cpus-per-task from the batch job on Slurm 22.05
        s += fmt::format(" --cpus-per-task={}", *plan.cpus_per_task);
    }
    // Not --kill-on-bad-exit=1: the nodes it kills exit 143, which would hide the failing node's own code
    // (checked on Slurm 22.05: two nodes exiting 3 gave the job 143).
    // --label starts every line of a node's output with its rank ("0: "), so one output file holds every
    // node's lines and `logs --node K` can pick one node's out of it.
    s += " --kill-on-bad-exit=0 --label \\\n"
         "    /bin/bash -c \"$tandem_node\" tandem-node \"$tandem_setup\" \"$tandem_run\"\n";
    if (!plan.recovery) {
        s += "exit $?\n";
        return s;
    }
    // Recovery: the srun above becomes one attempt of a loop (the function body), run again inside the
    // allocation after a failing exit code while restarts are left; the rank environment is recomputed by
    // each attempt's srun. Each recovery is appended to the job's comment (a word the job's owner may
    // update), so `status` learns it from the cluster with no tandem process running.
    const std::size_t srun_at = s.rfind("srun --export=ALL");
    std::string srun = s.substr(srun_at);
    s.resize(srun_at);
    std::string codes;
    for (int c : plan.recovery->recover_on_exit_codes) {
        codes += fmt::format(" {}", c);
    }
    s += fmt::format("# resources.job_recovery: max_restarts_on_errors {}, recover_on_exit_codes [{}].\n",
                     plan.recovery->max_restarts_on_errors, codes.empty() ? "" : codes.substr(1));
    s += fmt::format("tandem_max_restarts={}\ntandem_recover_codes=' {} '\n", plan.recovery->max_restarts_on_errors,
                     codes.empty() ? "" : codes.substr(1));
    s += k_recovery_functions;
    s += "tandem_attempt() {\n" + srun + "}\n";
    s += "tandem_recover_loop\nexit $?\n";
    return s;
}

} // namespace tandem::slurm
