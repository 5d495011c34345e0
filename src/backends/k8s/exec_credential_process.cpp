#include "backends/k8s/exec_credential_process.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <thread>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

namespace tandem::k8s::detail {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

// Waits for the child until the deadline, then kills it. Returns the wait status, or -1 when it had to
// be killed.
int reap(pid_t pid, Clock::time_point deadline) {
    int status = 0;
    while (true) {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return status;
        }
        if (r < 0 && errno != EINTR) {
            return status;
        }
        if (Clock::now() >= deadline) {
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

} // namespace

std::string find_on_path(const std::string& command, const std::string& path_var) {
    std::size_t start = 0;
    while (start <= path_var.size()) {
        auto end = path_var.find(':', start);
        if (end == std::string::npos) {
            end = path_var.size();
        }
        std::string dir = path_var.substr(start, end - start);
        std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        start = end + 1;
    }
    return {};
}

ProcessOutcome run_process(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& env, std::chrono::milliseconds timeout,
                           std::size_t max_output) {
    ProcessOutcome out;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        out.end = ProcessOutcome::End::spawn_failed;
        out.code = errno;
        return out;
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const auto& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : env) {
        envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        out.end = ProcessOutcome::End::spawn_failed;
        out.code = rc;
        return out;
    }

    const auto deadline = Clock::now() + timeout;
    char buf[8192];
    bool killed = false;
    while (true) {
        if (Clock::now() >= deadline) {
            out.end = ProcessOutcome::End::timed_out;
            killed = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        int n = ::poll(&p, 1, remaining_ms(deadline));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            continue; // the deadline check above ends the loop
        }
        ssize_t got = ::read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break; // EOF (or an error, which ends the output the same way)
        }
        out.stdout_text.append(buf, static_cast<std::size_t>(got));
        if (out.stdout_text.size() > max_output) {
            out.end = ProcessOutcome::End::too_much_output;
            killed = true;
            break;
        }
    }
    ::close(fds[0]);
    if (killed) {
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return out;
    }
    const int status = reap(pid, deadline);
    if (status == -1) {
        out.end = ProcessOutcome::End::timed_out;
    } else if (WIFSIGNALED(status)) {
        out.end = ProcessOutcome::End::signalled;
        out.code = WTERMSIG(status);
    } else {
        out.end = ProcessOutcome::End::exited;
        out.code = WEXITSTATUS(status);
    }
    return out;
}

} // namespace tandem::k8s::detail
