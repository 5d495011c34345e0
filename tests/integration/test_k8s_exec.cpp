// `tandem exec` and `tandem shell` on Kubernetes, through the real API server's pods/exec (a WebSocket,
// v5.channel.k8s.io on this kubectl-era protocol list) to the node agent's kubelet endpoint, as the
// namespace-only certificate user.

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"
#include "../cli/pty_run.hpp"

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
    auto shell = run_in_pty(lab.options.env, {"shell", std::to_string(id)}, 97, 31,
                            "echo \"size=$(stty size) rank=$TANDEM_NODE_RANK sum=$((6*7))\"; exit 5\r");
    INFO(shell.screen);
    CHECK(contains(shell.screen, "size=31 97 rank=0 sum=42"));
    CHECK(shell.exit_code == 5);
    lab.tandem({"cancel", std::to_string(id)});
}

TEST_CASE("k8s: tandem attach follows the rank's output from now on and exits with its program's code") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_CERT"));
    auto file = lab.task("attach", "name: attach-to\nnum_nodes: 2\nrun: |\n  echo early-$TANDEM_NODE_RANK\n"
                                   "  sleep 4\n  for i in 1 2 3; do echo line-$i-$TANDEM_NODE_RANK; sleep 0.3; done\n"
                                   "  exit $((4 + TANDEM_NODE_RANK))\n");
    const int id = lab.launch_detached(file);
    lab.wait_state(id, "RUNNING");
    auto rank1 = lab.tandem({"attach", std::to_string(id), "--node", "1"});
    INFO(rank1);
    CHECK(rank1.exit_code == 5);
    CHECK(contains(rank1.out, "line-1-1\nline-2-1\nline-3-1\n"));
    CHECK_FALSE(contains(rank1.out, "early-1")); // from now on: the history is tandem logs'
    CHECK_FALSE(contains(rank1.out, "-0\n"));
    lab.wait_terminal(id);
    auto ended = lab.tandem({"attach", std::to_string(id)});
    CHECK(ended.exit_code == 2);
    CHECK(contains(ended.err, "(it has ended): nothing to attach to"));
}
