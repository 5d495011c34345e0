#include "pty_run.hpp"

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace tandem_test {

PtyResult run_in_pty(const EnvOverrides& env, const std::vector<std::string>& args, int columns, int rows,
                     const std::string& input, std::chrono::seconds limit) {
    PtyResult out;
    int master = -1;
    winsize ws{};
    ws.ws_col = static_cast<unsigned short>(columns);
    ws.ws_row = static_cast<unsigned short>(rows);
    const std::string bin = tandem_bin();
    std::vector<std::string> argv_text{bin};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
    if (pid < 0) {
        return out;
    }
    if (pid == 0) {
        for (const auto& [k, v] : env) {
            if (v) {
                ::setenv(k.c_str(), v->c_str(), 1);
            } else {
                ::unsetenv(k.c_str());
            }
        }
        ::setenv("TERM", "xterm", 1);
        ::execv(bin.c_str(), argv.data());
        ::_exit(127);
    }
    if (!input.empty() && ::write(master, input.data(), input.size()) < 0) {
        out.screen = "(could not type into the terminal)";
    }
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    bool exited = false;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{master, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
            const ssize_t n = ::read(master, buf, sizeof buf);
            if (n > 0) {
                out.screen.append(buf, static_cast<std::size_t>(n));
                continue;
            }
        }
        if (::waitpid(pid, &status, WNOHANG) == pid) { // gone, and the terminal is read dry
            exited = true;
            break;
        }
    }
    if (!exited) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    ::close(master);
    if (exited && WIFEXITED(status)) {
        out.exit_code = WEXITSTATUS(status);
    }
    return out;
}

} // namespace tandem_test
