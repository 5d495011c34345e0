#include "cli/app.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "backends/upload/progress.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/identity.hpp"

namespace tandem::cli {

namespace {

struct CommandEntry {
    const char* name;
    const char* summary;
    CommandSetup setup;
};

// Every subcommand, in the order `tandem --help` lists them.
constexpr CommandEntry k_commands[] = {
    {"launch", "Submit a task (SkyPilot task YAML) to the best cluster and follow it", setup_launch},
    {"status", "Show jobs and their states across every cluster", setup_status},
    {"logs", "Print or follow a job's output", setup_logs},
    {"exec", "Run one command beside a running job (stdout, stderr and exit code kept)", setup_exec},
    {"shell", "Open an interactive shell on a running job's node", setup_shell},
    {"attach", "Follow a running job's output live until it ends, with its exit code", setup_attach},
    {"cancel", "Cancel jobs", setup_cancel},
    {"serve",
     "Run a `service:` task as replicas behind one endpoint (Kubernetes): up, status, logs, update, down",
     setup_serve},
    {"plan", "Dry run: show where a task would run, why, and what would be submitted", setup_plan},
    {"check", "Check that each configured cluster is reachable and accepts our credentials", setup_check},
    {"infra", "Show clusters, pools and free/total GPUs", setup_infra},
    {"dashboard", "Serve a page of every job, log and cluster to a browser, until Ctrl-C", setup_dashboard},
    {"completion", "Print a shell completion script (bash, zsh, fish)", setup_completion},
    {"__complete", "Completion candidates (used by the completion scripts)", setup_complete_helper},
};

void print_error(const Error& e) {
    std::istringstream lines(e.message);
    for (std::string line; std::getline(lines, line);) {
        std::fprintf(stderr, "tandem: error: %s\n", line.c_str());
    }
    if (!e.hint.empty()) {
        std::fprintf(stderr, "hint: %s\n", e.hint.c_str());
    }
}

// The app layer's events: progress and diagnostics on stderr, one line each.
void print_event(const app::Event& event) {
    note(event.level == app::Event::Level::error ? "tandem: error: " + event.text : "tandem: " + event.text);
}

} // namespace

int exit_code_for(ErrorKind kind) {
    switch (kind) {
    case ErrorKind::invalid_spec:
    case ErrorKind::config:
    case ErrorKind::usage:
        return exit_code::bad_input;
    case ErrorKind::not_found:
        return exit_code::not_found;
    case ErrorKind::unauthorized:
        return exit_code::unauthorized;
    case ErrorKind::unavailable:
    case ErrorKind::timeout:
        return exit_code::unavailable;
    case ErrorKind::remote:
    case ErrorKind::internal:
        return exit_code::failure;
    }
    return exit_code::failure;
}

namespace {

// The command itself, with its Context (and so the job store) closed before it returns.
int run_action(const Action& action) {
    try {
        if (stderr_is_terminal()) { // a progress line for uploads; nothing when stderr is a file or pipe
            upload::set_progress([](const std::string& line, bool done) {
                std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), done ? "\n" : "");
                std::fflush(stderr);
            });
        }
        auto ctx = app::Session::create(app::system_seams(print_event));
        if (!ctx) {
            print_error(ctx.error());
            return exit_code_for(ctx.error().kind);
        }
        auto result = action(*ctx);
        const int code = result ? *result : exit_code_for(result.error().kind);
        if (!result) {
            print_error(result.error());
        }
        return code;
    } catch (const std::exception& e) {
        // A bug, not a user error: still one line, never a stack trace.
        print_error(Error{ErrorKind::internal, std::string("internal error: ") + e.what(),
                          "please report this with the command you ran"});
        return exit_code::failure;
    }
}

} // namespace

int run(int argc, char** argv) {
    CLI::App app{"tandem: one task spec, run on Slurm, Kubernetes or this machine.", "tandem"};
    app.set_version_flag("--version", "tandem " + std::string(k_tandem_version));
    app.require_subcommand(1);
    app.footer(
        "Exit codes: 0 ok, 1 backend or internal error, 2 bad input, 3 not found, 4 unauthorized,\n"
        "5 unreachable; launch --wait, logs -f and status --exit-code return the job's own exit code,\n"
        "100 failed without one, 101 not finished, 103 cancelled, 104 unknown, 105 never started.");
    Action action;
    for (const auto& entry : k_commands) {
        CLI::App* command = app.add_subcommand(entry.name, entry.summary);
        entry.setup(*command, action);
    }
    // `tandem exec JOB -- CMD...`: the words after `--` are the command's, untouched.
    std::vector<std::string> args(argv + 1, argv + argc);
    if (auto exec = std::find(args.begin(), args.end(), "exec"); exec != args.end()) {
        if (auto dashes = std::find(exec, args.end(), "--"); dashes != args.end()) {
            set_exec_command_tail(std::vector<std::string>(dashes + 1, args.end()));
            args.erase(dashes, args.end());
        }
    }
    std::reverse(args.begin(), args.end()); // CLI11 takes the arguments last first
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::string message = e.what();
        std::replace(message.begin(), message.end(), '\n', ' ');
        std::fprintf(stderr, "tandem: error: %s\nhint: run `tandem --help` or `tandem COMMAND --help`\n",
                     message.c_str());
        return exit_code::bad_input;
    }
    Context::warm_up(); // after parsing: --help and usage errors never load libcurl
    const int code = run_action(action);
    // Every result is written and every file closed by now. Ending here skips the static destructors and
    // the atexit cleanups of libcurl and OpenSSL (0.5 ms of a 30 ms status), and a helper thread still
    // busy (a libcurl load this command did not need, a cluster past its deadline) cannot trip over them.
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
}

} // namespace tandem::cli
