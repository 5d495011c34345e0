// Child-process plumbing for the CLI scenarios. Everything the child needs (argv, envp) is built before
// fork, so the child only calls async-signal-safe functions until exec (safe even if a test uses threads);
// the child leads its own process group so a timeout can kill everything it started in that group.

#include "run_tandem.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <sys/wait.h>

extern char** environ;

namespace tandem_test {

namespace {

// A child that exits while we still write its stdin must not kill the test runner with SIGPIPE.
const bool k_sigpipe_ignored = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
}();

std::vector<std::string> build_env(const EnvOverrides& overrides) {
    std::map<std::string, std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string kv(*e);
        auto eq = kv.find('=');
        if (eq == std::string::npos) {
            continue;
        }
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : overrides) {
        if (v) {
            env[k] = *v;
        } else {
            env.erase(k);
        }
    }
    std::vector<std::string> out;
    out.reserve(env.size());
    for (const auto& [k, v] : env) {
        out.push_back(k + "=" + v);
    }
    return out;
}

void set_nonblocking(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void close_fd(int& fd) {
    if (fd >= 0) {
        close(fd);
        fd = -1;
    }
}

// Reads what is available; returns false at EOF or on a hard error.
bool drain(int fd, std::string& into) {
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            into.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n == 0) {
            return false;
        }
        if (errno == EINTR) {
            continue;
        }
        return errno == EAGAIN || errno == EWOULDBLOCK;
    }
}

std::optional<std::vector<std::string>> proc_stat_fields(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!in || !std::getline(in, line)) {
        return std::nullopt;
    }
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) {
        return std::nullopt;
    }
    std::istringstream rest(line.substr(close_paren + 1));
    std::vector<std::string> fields;
    for (std::string f; rest >> f;) {
        fields.push_back(f);
    }
    return fields; // [0] state, [2] pgrp
}

} // namespace

std::vector<std::string> RunResult::err_lines_starting(const std::string& prefix) const {
    std::vector<std::string> lines;
    for (const auto& line : split_lines(err)) {
        if (line.rfind(prefix, 0) == 0) {
            lines.push_back(line);
        }
    }
    return lines;
}

std::ostream& operator<<(std::ostream& os, const RunResult& r) {
    os << "exit " << r.exit_code;
    if (r.signal != 0) {
        os << " (signal " << r.signal << ")";
    }
    if (r.timed_out) {
        os << " (TIMED OUT)";
    }
    os << " after " << r.elapsed.count() << " ms\n--- stdout (" << r.out.size() << " bytes) ---\n"
       << (r.out.size() > 4000 ? r.out.substr(0, 4000) + "\n[...]" : r.out) << "\n--- stderr ("
       << r.err.size() << " bytes) ---\n"
       << (r.err.size() > 4000 ? r.err.substr(0, 4000) + "\n[...]" : r.err);
    return os;
}

Child::Child(const std::vector<std::string>& argv_in, const RunOptions& options)
    : m_stdin(options.stdin_text), m_timeout(options.timeout), m_start(std::chrono::steady_clock::now()) {
    (void)k_sigpipe_ignored;
    const std::vector<std::string> env = build_env(options.env);
    std::vector<char*> argv;
    for (const auto& a : argv_in) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : env) {
        envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);
    const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
    const std::vector<int> pass_fds = options.pass_fds;

    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        FAIL("pipe2: " << std::strerror(errno));
    }
    m_pid = fork();
    if (m_pid < 0) {
        FAIL("fork: " << std::strerror(errno));
    }
    if (m_pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        for (std::size_t i = 0; i < pass_fds.size(); ++i) {
            const int target = 3 + static_cast<int>(i);
            if (pass_fds[i] == target) {
                fcntl(target, F_SETFD, 0); // dup2 onto itself would keep FD_CLOEXEC
            } else {
                dup2(pass_fds[i], target);
            }
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        std::signal(SIGPIPE, SIG_DFL);
        if (cwd != nullptr && chdir(cwd) != 0) {
            const char msg[] = "run_tandem: chdir failed\n";
            (void)!write(2, msg, sizeof msg - 1);
            _exit(126);
        }
        execve(argv[0], argv.data(), envp.data());
        const char msg[] = "run_tandem: exec failed\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(127);
    }
    setpgid(m_pid, m_pid); // also in the parent, so signal_group() works whoever runs first
    close(in[0]);
    close(out[1]);
    close(err[1]);
    m_in = in[1];
    m_out = out[0];
    m_err = err[0];
    set_nonblocking(m_in);
    set_nonblocking(m_out);
    set_nonblocking(m_err);
    if (m_stdin.empty()) {
        close_fd(m_in);
    }
}

Child::Child(Child&& other) noexcept
    : m_pid(other.m_pid), m_in(other.m_in), m_out(other.m_out), m_err(other.m_err),
      m_stdin(std::move(other.m_stdin)), m_timeout(other.m_timeout), m_start(other.m_start),
      m_waited(other.m_waited) {
    other.m_pid = -1;
    other.m_in = other.m_out = other.m_err = -1;
    other.m_waited = true;
}

Child::~Child() {
    if (!m_waited && m_pid > 0) {
        ::kill(-m_pid, SIGKILL);
        ::kill(m_pid, SIGKILL);
        waitpid(m_pid, nullptr, 0);
    }
    close_fd(m_in);
    close_fd(m_out);
    close_fd(m_err);
}

void Child::signal_group(int sig) const {
    if (m_pid > 0) {
        ::kill(-m_pid, sig);
    }
}

RunResult Child::wait() {
    RunResult r;
    const auto deadline = m_start + m_timeout;
    std::size_t written = 0;
    int status = 0;
    struct rusage usage {};
    bool reaped = false;
    std::optional<std::chrono::steady_clock::time_point> reaped_at;
    while (m_out >= 0 || m_err >= 0 || !reaped) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            r.timed_out = true;
            break;
        }
        if (!reaped) {
            pid_t w = wait4(m_pid, &status, WNOHANG, &usage);
            if (w == m_pid) {
                reaped = true;
                reaped_at = now;
            }
        }
        // A process the child left behind may hold its pipes open: give them a moment, then stop reading.
        if (reaped && reaped_at && now - *reaped_at > 2s) {
            break;
        }
        pollfd fds[3];
        nfds_t n = 0;
        int* owners[3];
        if (m_out >= 0) {
            fds[n] = {m_out, POLLIN, 0};
            owners[n++] = &m_out;
        }
        if (m_err >= 0) {
            fds[n] = {m_err, POLLIN, 0};
            owners[n++] = &m_err;
        }
        if (m_in >= 0) {
            fds[n] = {m_in, POLLOUT, 0};
            owners[n++] = &m_in;
        }
        if (n == 0) {
            // Pipes closed, child not reaped yet.
            std::this_thread::sleep_for(5ms);
            continue;
        }
        int ready = poll(fds, n, 20);
        if (ready < 0 && errno != EINTR) {
            break;
        }
        for (nfds_t i = 0; i < n && ready > 0; ++i) {
            if (fds[i].revents == 0) {
                continue;
            }
            int& fd = *owners[i];
            if (&fd == &m_in) {
                ssize_t k = write(fd, m_stdin.data() + written, m_stdin.size() - written);
                if (k > 0) {
                    written += static_cast<std::size_t>(k);
                }
                if ((k < 0 && errno != EAGAIN && errno != EINTR) || written == m_stdin.size() ||
                    (fds[i].revents & (POLLERR | POLLHUP))) {
                    close_fd(m_in);
                }
                continue;
            }
            if (!drain(fd, &fd == &m_out ? r.out : r.err)) {
                close_fd(fd);
            }
        }
    }
    if (!reaped) {
        ::kill(-m_pid, SIGKILL);
        ::kill(m_pid, SIGKILL);
        wait4(m_pid, &status, 0, &usage);
        if (m_out >= 0) {
            drain(m_out, r.out);
        }
        if (m_err >= 0) {
            drain(m_err, r.err);
        }
    }
    close_fd(m_in);
    close_fd(m_out);
    close_fd(m_err);
    m_waited = true;
    r.elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - m_start);
    if (WIFEXITED(status)) {
        r.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r.signal = WTERMSIG(status);
        r.exit_code = 128 + r.signal;
    }
    if (r.timed_out) {
        r.exit_code = -1;
    }
    r.max_rss_kb = usage.ru_maxrss;
    return r;
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& options) {
    Child child(argv, options);
    return child.wait();
}

bool process_gone(pid_t pid) {
    auto f = proc_stat_fields(pid);
    if (!f) {
        return ::kill(pid, 0) != 0;
    }
    return f->empty() || (*f)[0] == "Z" || (*f)[0] == "X";
}

std::vector<pid_t> live_group_members(pid_t pgid) {
    std::vector<pid_t> out;
    DIR* dir = opendir("/proc");
    if (dir == nullptr) {
        return out;
    }
    while (dirent* e = readdir(dir)) {
        char* end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) {
            continue;
        }
        auto f = proc_stat_fields(static_cast<pid_t>(pid));
        if (f && f->size() > 2 && (*f)[2] == std::to_string(pgid) && (*f)[0] != "Z" && (*f)[0] != "X") {
            out.push_back(static_cast<pid_t>(pid));
        }
    }
    closedir(dir);
    return out;
}

} // namespace tandem_test
