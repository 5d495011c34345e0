#include "backends/local/local_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/wait.h>

namespace tandem::local {

namespace {

// Fields of /proc/PID/stat after the parenthesised command name, which may itself hold spaces or ')'.
std::optional<std::vector<std::string>> stat_fields(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!in || !std::getline(in, line)) {
        return std::nullopt;
    }
    auto close = line.rfind(')');
    if (close == std::string::npos) {
        return std::nullopt;
    }
    std::istringstream rest(line.substr(close + 1));
    std::vector<std::string> fields;
    for (std::string f; rest >> f;) {
        fields.push_back(f);
    }
    return fields; // fields[0] is state (field 3), fields[2] pgrp (5), fields[19] starttime (22)
}

[[noreturn]] void child_fail(int fd, const char* what) {
    int err = errno;
    std::string msg = fmt::format("{}: {}", what, std::strerror(err));
    (void)!write(fd, msg.data(), msg.size());
    _exit(127);
}

} // namespace

std::optional<std::uint64_t> start_ticks_of(int pid) {
    auto f = stat_fields(pid);
    if (!f || f->size() < 20) {
        return std::nullopt;
    }
    return std::stoull((*f)[19]);
}

bool is_alive(const ProcessId& id) {
    auto f = stat_fields(id.pid);
    if (!f || f->size() < 20 || (*f)[0] == "Z" || (*f)[0] == "X") {
        return false;
    }
    return std::stoull((*f)[19]) == id.start_ticks;
}

bool group_alive(int pgid) {
    DIR* dir = opendir("/proc");
    if (dir == nullptr) {
        return ::kill(-pgid, 0) == 0;
    }
    bool alive = false;
    while (dirent* e = readdir(dir)) {
        char* end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) {
            continue;
        }
        auto f = stat_fields(static_cast<int>(pid));
        if (f && f->size() > 2 && (*f)[2] == std::to_string(pgid) && (*f)[0] != "Z" && (*f)[0] != "X") {
            alive = true;
            break;
        }
    }
    closedir(dir);
    return alive;
}

bool terminate_group(int pgid, std::chrono::milliseconds grace) {
    if (::kill(-pgid, SIGTERM) != 0 && errno == ESRCH) {
        return false;
    }
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!group_alive(pgid)) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(-pgid, SIGKILL);
    // KILL is delivered asynchronously; wait (briefly) so the caller's "cancelled" is true when it returns.
    const auto kill_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (group_alive(pgid) && std::chrono::steady_clock::now() < kill_deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

Result<ProcessId> spawn_detached(const SpawnRequest& request) {
    // Everything the children need is built before fork: no allocation between fork and exec.
    std::vector<char*> argv;
    for (const auto& a : request.argv) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : request.env) {
        envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);

    int pid_pipe[2]; // grandchild pid, from the middle child
    int err_pipe[2]; // exec failure text; closed on successful exec (O_CLOEXEC)
    if (pipe2(pid_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        return fail(ErrorKind::internal, fmt::format("cannot start the job: pipe: {}", std::strerror(errno)));
    }
    pid_t middle = fork();
    if (middle < 0) {
        return fail(ErrorKind::internal, fmt::format("cannot start the job: fork: {}", std::strerror(errno)));
    }
    if (middle == 0) {
        pid_t job = fork();
        if (job < 0) {
            child_fail(err_pipe[1], "fork");
        }
        if (job > 0) {
            (void)!write(pid_pipe[1], &job, sizeof job);
            _exit(0);
        }
        // The job itself leads the new session, so its pid is its process group id: cancel signals -pid.
        if (setsid() < 0) {
            child_fail(err_pipe[1], "setsid");
        }
        int in = open("/dev/null", O_RDONLY);
        int out = open(request.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in < 0 || out < 0) {
            child_fail(err_pipe[1], "open log file");
        }
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        // Nothing else of the caller's (a CI log pipe, a make jobserver) may stay open for the job's life.
        close_range(3, ~0U, 0);
        if (chdir(request.cwd.c_str()) != 0) {
            child_fail(err_pipe[1], "chdir to workdir");
        }
        // The job must not inherit the CLI's ignored or blocked signals.
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], argv.data(), envp.data());
        child_fail(err_pipe[1], "exec");
    }
    close(pid_pipe[1]);
    close(err_pipe[1]);
    int status = 0;
    waitpid(middle, &status, 0);
    pid_t job = 0;
    ssize_t n = read(pid_pipe[0], &job, sizeof job);
    close(pid_pipe[0]);
    char buf[512];
    ssize_t m = read(err_pipe[0], buf, sizeof buf);
    close(err_pipe[0]);
    if (m > 0) {
        return fail(ErrorKind::internal,
                    fmt::format("cannot start the job: {}", std::string(buf, static_cast<std::size_t>(m))));
    }
    if (n != sizeof job || job <= 0) {
        return fail(ErrorKind::internal, "cannot start the job: the launcher process failed");
    }
    ProcessId id{job, 0};
    // The grandchild exists (it wrote no error and exec succeeded or is under way); its start time is
    // readable as soon as it exists.
    if (auto ticks = start_ticks_of(job)) {
        id.start_ticks = *ticks;
    }
    return id;
}

} // namespace tandem::local
