// `tandem exec JOB [--node K] [-i] -- CMD...`: one command beside a running job, stdout and stderr kept
// apart, its exit code returned (for scripts, like `kubectl exec`). `tandem shell JOB [--node K]`: an
// interactive shell there, on a pseudo-terminal that follows this terminal's size; keys (Ctrl-C too) go
// to the remote side, and the shell's exit code is returned. `tandem attach JOB [--node K]`: the rank's
// output live from now on until its program ends, then that program's exit code (Kubernetes' pods/attach).

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/ioctl.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"

namespace tandem::cli {

namespace {

struct ExecFlags {
    std::string job;
    std::optional<int> node;
    bool stdin_open = false;
    std::vector<std::string> command;
};

std::atomic<bool> g_resized{false};

void on_winch(int) {
    g_resized = true;
}

void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return; // the reader went away
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

TtySize terminal_size() {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        return TtySize{ws.ws_col, ws.ws_row};
    }
    if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        return TtySize{ws.ws_col, ws.ws_row};
    }
    return TtySize{};
}

// The local terminal in raw mode for the life of a shell: every key goes to the remote side as it is.
class RawTerminal {
public:
    RawTerminal() {
        if (::tcgetattr(STDIN_FILENO, &m_saved) == 0) {
            termios raw = m_saved;
            ::cfmakeraw(&raw);
            m_active = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
        }
    }
    ~RawTerminal() {
        if (m_active) {
            ::tcsetattr(STDIN_FILENO, TCSADRAIN, &m_saved);
        }
    }
    RawTerminal(const RawTerminal&) = delete;
    RawTerminal& operator=(const RawTerminal&) = delete;

private:
    termios m_saved{};
    bool m_active = false;
};

Result<std::pair<JobRecord, Backend*>> running_job(Context& ctx, const std::string& ref,
                                                   std::optional<int> node,
                                                   std::string_view what = "run a command beside") {
    auto job = find_job(ctx, ref);
    if (!job) {
        return tl::unexpected(job.error());
    }
    if (job->is_group()) {
        return fail(
            ErrorKind::usage,
            fmt::format("job {} is a pipeline or job group: name one of its members' jobs (tandem status "
                        "{} lists them)",
                        job->id, job->id));
    }
    if (job->remote_id.empty()) {
        return fail(ErrorKind::not_found,
                    fmt::format("job {} was never submitted: {}", job->id, job->reason));
    }
    if (node && (*node < 0 || *node >= job->num_nodes)) {
        return fail(ErrorKind::usage, fmt::format("--node {}: job {} has {} node(s), ranks 0..{}", *node,
                                                  job->id, job->num_nodes, job->num_nodes - 1));
    }
    // Its state now (one refresh): a command goes beside a running job only.
    const auto views = refresh_jobs(ctx, {*job});
    const JobRecord& now = views.front().record;
    if (!views.front().unreachable && now.state != JobState::running) {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("job {} is {}{}: nothing to {}", now.id, to_string(now.state),
                                is_terminal(now.state) ? " (it has ended)" : " (not running yet)", what),
                    is_terminal(now.state) ? std::string()
                                           : fmt::format("tandem status -w {} waits for it", now.id));
    }
    auto backend = ctx.backend(job->cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    return std::make_pair(now, *backend);
}

// The running job and its cluster's Exec, or why a command cannot run beside it.
Result<std::pair<JobRecord, Exec*>> running_exec(Context& ctx, const ExecFlags& flags) {
    auto found = running_job(ctx, flags.job, flags.node);
    if (!found) {
        return tl::unexpected(found.error());
    }
    auto exec = require(*found->second, &Capabilities::exec, Capability::exec, found->first.id);
    if (!exec) {
        return tl::unexpected(exec.error());
    }
    return std::make_pair(std::move(found->first), *exec);
}

Result<int> exec_command(Context& ctx, const ExecFlags& flags) {
    auto found = running_exec(ctx, flags);
    if (!found) {
        return tl::unexpected(found.error());
    }
    auto& [job, exec] = *found;
    ExecRequest request{flags.command, flags.node.value_or(0), false};
    ExecIo io;
    io.input_fd = flags.stdin_open ? STDIN_FILENO : -1;
    io.out = [](std::string_view b) { write_all(STDOUT_FILENO, b); };
    io.err = [](std::string_view b) { write_all(STDERR_FILENO, b); };
    return exec->exec(job, request, io);
}

Result<int> shell_command(Context& ctx, const ExecFlags& flags) {
    if (::isatty(STDIN_FILENO) != 1) {
        return fail(ErrorKind::usage, "tandem shell needs a terminal on stdin",
                    "from a script, run one command with `tandem exec JOB -- CMD`");
    }
    auto found = running_exec(ctx, flags);
    if (!found) {
        return tl::unexpected(found.error());
    }
    auto& [job, exec] = *found;
    ExecRequest request{{}, flags.node.value_or(0), true};
    ExecIo io;
    io.input_fd = STDIN_FILENO;
    io.out = [](std::string_view b) { write_all(STDOUT_FILENO, b); };
    io.err = [](std::string_view b) { write_all(STDERR_FILENO, b); };
    io.size = terminal_size();
    if (const char* term = std::getenv("TERM"); term && *term) {
        io.term = term;
    }
    io.resized = []() -> std::optional<TtySize> {
        if (!g_resized.exchange(false)) {
            return std::nullopt;
        }
        return terminal_size();
    };
    struct sigaction sa {};
    sa.sa_handler = on_winch;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGWINCH, &sa, nullptr);
    RawTerminal raw;
    return exec->exec(job, request, io);
}

Result<int> attach_command(Context& ctx, const ExecFlags& flags) {
    auto found = running_job(ctx, flags.job, flags.node, "attach to");
    if (!found) {
        return tl::unexpected(found.error());
    }
    auto& [job, backend] = *found;
    auto attach = require(*backend, &Capabilities::attach, Capability::attach, job.id);
    if (!attach) {
        return tl::unexpected(attach.error());
    }
    ExecIo io;
    io.out = [](std::string_view b) { write_all(STDOUT_FILENO, b); };
    io.err = [](std::string_view b) { write_all(STDERR_FILENO, b); };
    return (*attach)->attach(job, flags.node.value_or(0), io);
}

void add_common(CLI::App& command, ExecFlags& flags) {
    command.add_option("JOB", flags.job, "Job id")->required();
    command.add_option("--node", flags.node, "The node of rank K (default 0)");
}

} // namespace

namespace {
std::vector<std::string> g_after_dashes;
} // namespace

void set_exec_command_tail(std::vector<std::string> words) {
    g_after_dashes = std::move(words);
}

void setup_exec(CLI::App& command, Action& action) {
    auto flags = std::make_shared<ExecFlags>();
    add_common(command, *flags);
    command.add_flag("-i,--stdin", flags->stdin_open, "Pass this process's stdin to the command");
    // The command is every word after `--` (app.cpp takes them off before CLI11 parses: its `--` handling
    // and `[a,b]` list syntax would change them), or every word from the first one that is not ours.
    command.prefix_command();
    command.footer("Usage: tandem exec JOB [--node K] [-i] -- CMD [ARG...]\n"
                   "Example: tandem exec 42 --node 1 -- nvidia-smi\n"
                   "Exit code: the command's own (tandem's own failures: see tandem --help).");
    command.callback([flags, &action, &command] {
        flags->command = command.remaining();
        flags->command.insert(flags->command.end(), g_after_dashes.begin(), g_after_dashes.end());
        action = [flags](Context& ctx) -> Result<int> {
            if (flags->command.empty()) {
                return fail(ErrorKind::usage, "tandem exec: no command given",
                            "tandem exec JOB -- CMD [ARG...] (`tandem shell JOB` for an interactive shell)");
            }
            return exec_command(ctx, *flags);
        };
    });
}

void setup_shell(CLI::App& command, Action& action) {
    auto flags = std::make_shared<ExecFlags>();
    add_common(command, *flags);
    command.footer(
        "Slurm: srun --jobid=ID --overlap --pty on the node (needs ssh: in the cluster's config).\n"
        "Exit code: the shell's own.");
    command.callback(
        [flags, &action] { action = [flags](Context& ctx) { return shell_command(ctx, *flags); }; });
}

void setup_attach(CLI::App& command, Action& action) {
    auto flags = std::make_shared<ExecFlags>();
    add_common(command, *flags);
    command.footer(
        "Follows the rank's output from now on (no history: tandem logs has it) until its program\n"
        "ends. Kubernetes: pods/attach. Slurm and local: not supported (tandem logs -f JOB).\n"
        "Exit code: the program's own.");
    command.callback(
        [flags, &action] { action = [flags](Context& ctx) { return attach_command(ctx, *flags); }; });
}

} // namespace tandem::cli
