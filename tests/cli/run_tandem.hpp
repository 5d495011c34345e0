#pragma once
// Scenario-test support: run the real `tandem` binary as a child process in a throwaway HOME and
// TANDEM_HOME, with stdout, stderr and the exit status captured separately and a timeout on every child,
// so a hang fails the test instead of blocking CI.

#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/types.h>

namespace tandem_test {

using namespace std::chrono_literals;

struct RunResult {
    int exit_code = -1;     // the process's exit status, or 128+N when killed by signal N
    int signal = 0;         // the signal that killed it, 0 when it exited
    bool timed_out = false; // killed by us after the timeout
    std::string out;
    std::string err;
    std::chrono::milliseconds elapsed{0};
    long max_rss_kb = 0; // the child's peak resident set (wait4's ru_maxrss), 0 when not reaped

    bool exited() const { return signal == 0 && !timed_out; }
    // Lines of `err` that start with `prefix`.
    std::vector<std::string> err_lines_starting(const std::string& prefix) const;
};
std::ostream& operator<<(std::ostream& os, const RunResult& r);

// Environment changes for one child: a value sets the variable, nullopt removes it.
using EnvOverrides = std::map<std::string, std::optional<std::string>>;

struct RunOptions {
    EnvOverrides env;
    std::string stdin_text;
    std::chrono::milliseconds timeout = 60s;
    std::string cwd; // empty: the test's own
    // Descriptors the child inherits as 3, 4, ... (as a shell's `3>file` would give it).
    std::vector<int> pass_fds;
};

inline RunOptions with_env(EnvOverrides env) {
    RunOptions options;
    options.env = std::move(env);
    return options;
}

// A started child; wait() collects it. Pipes are drained with poll() so neither side can deadlock.
class Child {
public:
    Child(const std::vector<std::string>& argv, const RunOptions& options);
    Child(Child&& other) noexcept;
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    Child& operator=(Child&&) = delete;
    ~Child();

    pid_t pid() const { return m_pid; }
    // Sends `sig` to the child's process group (the child leads its own group, as a shell job would).
    void signal_group(int sig) const;
    RunResult wait();

private:
    pid_t m_pid = -1;
    int m_in = -1, m_out = -1, m_err = -1;
    std::string m_stdin;
    std::chrono::milliseconds m_timeout;
    std::chrono::steady_clock::time_point m_start;
    bool m_waited = false;
};

// Runs argv[0] (a path) with `options`; the environment is this process's, with `options.env` applied.
RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {});

// A fresh temporary folder holding home/ (HOME) and tandem/ (TANDEM_HOME); removed recursively at the end.
class TempHome {
public:
    TempHome();
    ~TempHome();
    TempHome(const TempHome&) = delete;
    TempHome& operator=(const TempHome&) = delete;

    const std::string& root() const { return m_root; }
    std::string home() const { return m_root + "/home"; }
    std::string tandem_home() const { return m_root + "/tandem"; }
    std::string state_dir() const { return tandem_home() + "/state"; }
    std::string job_dir(int id) const { return state_dir() + "/jobs/" + std::to_string(id); }

    // Writes `text` to root()/relative (parent folders made) and returns the absolute path.
    std::string write(const std::string& relative, const std::string& text) const;
    // Writes TANDEM_HOME/config.yaml.
    std::string write_config(const std::string& text) const;
    std::string path(const std::string& relative) const { return m_root + "/" + relative; }

    // The environment every tandem child gets: HOME and TANDEM_HOME here, nothing of the developer's
    // tandem, Kubernetes or colour settings, TERM set so only "not a terminal" can turn colour off.
    EnvOverrides base_env() const;
    // Runs tandem with `args`, cwd root() unless options say otherwise; options.env is applied on top.
    RunResult tandem(const std::vector<std::string>& args, RunOptions options = {}) const;
    Child start_tandem(const std::vector<std::string>& args, RunOptions options = {}) const;

    // `status --all --json` parsed; fails the test when it does not exit 0 or is not JSON.
    nlohmann::json jobs_json() const;
    // The job as `status ID --json` shows it.
    nlohmann::json job_json(int id) const;
    // Polls `status ID --json` until the job is in a terminal state or `limit` passes; returns the last view.
    nlohmann::json wait_for_terminal(int id, std::chrono::milliseconds limit = 20s) const;

private:
    std::string m_root;
};

// Small file helpers.
std::optional<std::string> read_file(const std::string& path);
bool file_exists(const std::string& path);
std::string real_path(const std::string& path);
std::vector<std::string> list_files(const std::string& dir); // regular files, recursively
bool contains(const std::string& haystack, const std::string& needle);
// Empty when every needle occurs in `haystack`, each after the one before it; else which needle is
// missing or out of order, for the test's message.
std::string out_of_order(const std::string& haystack, const std::vector<std::string>& needles);
std::vector<std::string> split_lines(const std::string& text);
// A sweep's `logs` whose elements print "start <ns>" and "end <ns>" (date +%s%N), each line after a
// "[label] " prefix: the most elements that ran at once, and how many start and end lines were read.
struct Concurrency {
    int most = 0;
    std::size_t edges = 0;
};
Concurrency most_at_once(const std::string& logs);

// Whether process `pid` is gone or a zombie.
bool process_gone(pid_t pid);
// Live (non-zombie) processes in process group `pgid`.
std::vector<pid_t> live_group_members(pid_t pgid);

// Paths from the build.
std::string tandem_bin();
std::string examples_dir();
std::string fixtures_dir(); // tests/fixtures/cli

bool is_terminal_state(const std::string& state);

} // namespace tandem_test
