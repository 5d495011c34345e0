#pragma once
// Support for the Slurm-over-SSH integration tests: a TempHome whose config reaches the testbed's login
// node (sshd on 127.0.0.1:2222) with an `ssh:` cluster, a tandem child whose stdout lines are timed as
// they arrive, and a loopback TCP forwarder whose connections can be cut mid-stream.

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "slurm_testbed.hpp"

namespace tandem_test {

struct SshTargetOverrides {
    std::string port;          // empty: the testbed's
    std::string identity_file; // empty: the testbed's key
    std::string known_hosts;   // empty: the testbed's known_hosts
    std::string extra;         // more cluster settings, e.g. "    workdir_limit_mb: \"1\"\n"
};

struct SshLab {
    TempHome home;
    RunOptions options;
    explicit SshLab(const SshTargetOverrides& o = {});
    void configure(const SshTargetOverrides& o) const;
    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const;
    nlohmann::json job(int id) const;
    nlohmann::json wait_terminal(int id, std::chrono::milliseconds limit = 90s) const;
    nlohmann::json wait_state(int id, const std::string& state, std::chrono::milliseconds limit = 60s) const;
    std::string task(const std::string& name, const std::string& yaml) const;
};

int launched_id(const RunResult& r);

// A line of a child's stdout and when it arrived.
struct TimedLine {
    std::string text;
    std::chrono::steady_clock::time_point at;
};

// tandem started with stdout read line by line as it comes.
class StreamingTandem {
public:
    StreamingTandem(const SshLab& lab, const std::vector<std::string>& args);
    ~StreamingTandem();
    // Waits up to `limit` for a line containing `needle`; returns its arrival or nullopt.
    std::optional<TimedLine> wait_line(const std::string& needle, std::chrono::milliseconds limit);
    // Waits for the exit (up to `limit`, then kills); returns the exit code, -1 on timeout.
    int wait_exit(std::chrono::milliseconds limit);
    std::string all_out();
    std::string all_err();

private:
    void pump(int fd, bool is_out);
    pid_t m_pid = -1;
    std::mutex m_mutex;
    std::vector<TimedLine> m_lines;
    std::string m_partial, m_err;
    std::thread m_out_thread, m_err_thread;
};

// Forwards 127.0.0.1:port() to 127.0.0.1:upstream; cut() closes every open connection at once (the
// listener keeps accepting new ones).
class CuttableProxy {
public:
    explicit CuttableProxy(int upstream);
    ~CuttableProxy();
    int port() const { return m_port; }
    int connections() const { return m_accepted.load(); }
    void cut();

private:
    void accept_loop();
    int m_upstream;
    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_accepted{0};
    std::mutex m_mutex;
    std::vector<int> m_fds;
    std::vector<std::thread> m_threads;
    std::thread m_acceptor;
};

// A TCP port on 127.0.0.1 that nothing listens on.
int closed_port();

} // namespace tandem_test
