// `tandem exec` and `tandem shell` on Kubernetes, through the real API server's pods/exec (a WebSocket,
// v5.channel.k8s.io on this kubectl-era protocol list) to the node agent's kubelet endpoint, as the
// namespace-only certificate user.

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"

using namespace tandem_test;

TEST_CASE("k8s: tandem exec returns stdout, stderr and exit codes exactly, on the rank asked") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_CERT"));
    auto file = lab.task("beside", "name: exec-beside\nnum_nodes: 2\nrun: sleep 300\n");
    const int id = lab.launch_detached(file);
    lab.wait_state(id, "RUNNING");
    const std::string job = std::to_string(id);

    auto both = lab.tandem({"exec", job, "--", "sh", "-c", "echo out; echo err >&2; exit 7"});
    INFO(both);
    CHECK(both.exit_code == 7);
    CHECK(both.out == "out\n");
    CHECK(both.err == "err\n");
    auto rank1 = lab.tandem({"exec", job, "--node", "1", "--", "printenv", "TANDEM_NODE_RANK"});
    CHECK(rank1.exit_code == 0);
    CHECK(rank1.out == "1\n");
    auto quoted = lab.tandem({"exec", job, "--", "printf", "[%s]", "a b", "$HOME", "'q'", "&x=1"});
    CHECK(quoted.out == "[a b][$HOME]['q'][&x=1]");
    RunOptions in = lab.options;
    in.stdin_text = "line one\nline two\nline three\n";
    in.timeout = std::chrono::seconds(60);
    auto piped = lab.home.tandem({"exec", "-i", job, "--", "wc", "-l"}, in);
    CHECK(piped.exit_code == 0);
    CHECK(contains(piped.out, "3"));
    auto missing = lab.tandem({"exec", job, "--", "/no/such/program"});
    CHECK(missing.exit_code != 0);
    auto bad_node = lab.tandem({"exec", job, "--node", "5", "--", "true"});
    CHECK(bad_node.exit_code == 2);
    CHECK(contains(bad_node.err, "--node 5: job " + job + " has 2 node(s)"));
    CHECK(lab.tandem({"cancel", job}).exit_code == 0);
    lab.wait_terminal(id);
    auto ended = lab.tandem({"exec", job, "--", "true"});
    CHECK(ended.exit_code == 2);
    CHECK(contains(ended.err, "is CANCELLED (it has ended): nothing to run a command beside"));
}

TEST_CASE("k8s: tandem shell on a pseudo-terminal runs a command and exits with the shell's code") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_CERT"));
    auto file = lab.task("shell", "name: shell-beside\nrun: sleep 300\n");
    const int id = lab.launch_detached(file);
    lab.wait_state(id, "RUNNING");
    int master = -1;
    winsize ws{};
    ws.ws_col = 97;
    ws.ws_row = 31;
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
    REQUIRE(pid >= 0);
    if (pid == 0) {
        for (const auto& [k, v] : lab.options.env) {
            if (v) {
                ::setenv(k.c_str(), v->c_str(), 1);
            } else {
                ::unsetenv(k.c_str());
            }
        }
        ::setenv("TERM", "xterm", 1);
        const std::string bin = tandem_bin();
        const std::string job = std::to_string(id);
        ::execl(bin.c_str(), bin.c_str(), "shell", job.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    std::string seen;
    auto read_for = [&](const std::string& needle, std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        char buf[4096];
        while (seen.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
            pollfd p{master, POLLIN, 0};
            if (::poll(&p, 1, 100) > 0) {
                const ssize_t n = ::read(master, buf, sizeof buf);
                if (n <= 0) {
                    break;
                }
                seen.append(buf, static_cast<std::size_t>(n));
            }
        }
        return seen.find(needle) != std::string::npos;
    };
    const std::string command = "echo \"size=$(stty size) rank=$TANDEM_NODE_RANK sum=$((6*7))\"; exit 5\r";
    REQUIRE(::write(master, command.data(), command.size()) == static_cast<ssize_t>(command.size()));
    CHECK(read_for("sum=42", std::chrono::seconds(30)));
    CHECK(contains(seen, "size=31 97"));
    CHECK(contains(seen, "rank=0"));
    int status = 0;
    // Until tandem has exited (up to 60 s), keeping the terminal drained; a closed terminal reads at once,
    // so each turn also sleeps.
    pid_t done = 0;
    for (int i = 0; i < 600 && (done = ::waitpid(pid, &status, WNOHANG)) == 0; ++i) {
        read_for("\x01never", std::chrono::seconds(0));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(done == pid);
    ::close(master);
    INFO(seen);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 5);
    lab.tandem({"cancel", std::to_string(id)});
}
