// Slurm over SSH: workdir and file_mounts through the content-addressed upload cache (counted on the
// wire by a relay in front of sshd), an upload cut halfway, and `tandem exec` / `tandem shell` beside a
// running job (srun --overlap), the shell driven through a real pseudo-terminal.

#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../cli/pty_run.hpp"
#include "tcp_relay.hpp"
#include "test_slurm_ssh_support.hpp"

using namespace tandem_test;
namespace fs = std::filesystem;

namespace {

// The testbed's known_hosts, for the relay's port.
std::string known_hosts_for_port(const TempHome& home, int port) {
    auto text = read_file(slurm_env().at("SLURM_SSH_KNOWN_HOSTS"));
    REQUIRE(text);
    std::string out;
    for (const auto& line : split_lines(*text)) {
        auto space = line.find(' ');
        if (space == std::string::npos) {
            continue;
        }
        out += "[127.0.0.1]:" + std::to_string(port) + line.substr(space) + "\n";
    }
    const std::string path = home.root() + "/relay_known_hosts";
    std::ofstream(path) << out;
    return path;
}

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string out(n, '\0');
    for (auto& c : out) {
        c = static_cast<char>(rng());
    }
    return out;
}

struct RelayLab {
    TcpRelay relay{std::stoi(slurm_env().at("SLURM_SSH_PORT"))};
    SshLab lab;
    explicit RelayLab(const std::string& extra = {}) {
        lab.configure(SshTargetOverrides{std::to_string(relay.port()), "", known_hosts_for_port(lab.home, relay.port()),
                                         extra});
    }
};

// The first line `script` prints, run by bash with `arg` as $0.
std::string run_shell(const std::string& script, const std::string& arg) {
    auto r = run({"/bin/bash", "-c", script, arg});
    auto lines = split_lines(r.out);
    return lines.empty() ? std::string() : lines.front();
}

} // namespace

TEST_CASE("ssh: a workdir and two file_mounts reach every node, and an unchanged workdir is not sent again") {
    RelayLab r;
    auto& lab = r.lab;
    const std::string tag = std::to_string(::getpid());
    // Content of its own (the cluster's cache outlives a test run): the first launch must send it.
    const std::string blob = random_bytes(300 * 1024, std::random_device{}());
    lab.home.write("project/train.py", "print('train')\n");
    lab.home.write("project/blob.bin", blob);
    lab.home.write("project/.gitignore", "*.ckpt\n");
    lab.home.write("project/model.ckpt", "ignored");
    lab.home.write("project/.git/HEAD", "ref: refs/heads/main\n");
    lab.home.write("data/a.csv", "1,2\n");
    lab.home.write("data/sub/b.csv", "3,4\n");
    lab.home.write("cfg.yaml", "lr: 0.1\n");
    const std::string data_dest = "/tmp/tandem-fm-" + tag + "/data";
    const std::string cfg_dest = "fm-" + tag + "/cfg.yaml"; // relative: under the home folder
    const std::string run =
        "run: |\n"
        "  echo \"rank $TANDEM_NODE_RANK: $(cat " + data_dest + "/a.csv " + data_dest +
        "/sub/b.csv ~/" + cfg_dest + " | tr '\\n' ' ')\"\n"
        "  ls -a | tr '\\n' ' '; echo\n"
        "  sha256sum blob.bin | cut -c1-16\n";
    const std::string mounts = "file_mounts:\n  " + data_dest + ": data\n  " + cfg_dest + ": cfg.yaml\n";
    auto one = lab.task("one", "name: uploads-one\nworkdir: project\n" + mounts + run);
    // Housekeeping: a unit unused for 40 days and a partial upload two days old go; a recent unit stays.
    const std::string cache = slurm_env().at("SLURM_USER_HOME") + "/.tandem/cache/";
    const std::string stale = cache + "0123456789abcdef0123456789abcd" + tag.substr(0, 2);
    const std::string partial = cache + ".partial-deadbeef-" + tag;
    const std::string recent = cache + "fedcba9876543210fedcba98765432" + tag.substr(0, 2);
    REQUIRE(tandem_test::run({"/bin/sh", "-c",
                 "mkdir -p \"$1\" \"$2\" \"$3\" && touch -d '40 days ago' \"$1\" && touch -d '2 days ago' \"$2\" && "
                 "chown -R \"$4:\" \"$1\" \"$2\" \"$3\"",
                 "sh", stale, partial, recent, slurm_env().at("SLURM_SSH_USER")})
                .exit_code == 0);
    const auto before = r.relay.bytes_up();
    auto first = lab.tandem({"launch", one});
    INFO(first);
    REQUIRE(first.exit_code == 0);
    const auto first_bytes = r.relay.bytes_up() - before;
    CHECK(contains(first.out, "rank 0: 1,2 3,4 lr: 0.1"));
    CHECK(contains(first.out, ". .. .gitignore blob.bin train.py"));
    auto hash = run_shell("sha256sum \"$0\" | cut -c1-16", lab.home.root() + "/project/blob.bin");
    CHECK(contains(first.out, hash));
    CHECK(first_bytes > blob.size());
    CHECK(first.err.find("uploading") == std::string::npos); // stderr is not a terminal: no progress line
    CHECK_FALSE(fs::exists(stale));
    CHECK_FALSE(fs::exists(partial));
    CHECK(fs::exists(recent));
    fs::remove_all(recent);

    // The same files again, on two nodes: only the sbatch script and the queries cross the wire.
    auto two = lab.task("two", "name: uploads-two\nnum_nodes: 2\nworkdir: project\nconfig:\n  slurm:\n"
                               "    partition: cpu\n" + mounts + run);
    const auto middle = r.relay.bytes_up();
    auto second = lab.tandem({"launch", two});
    INFO(second);
    REQUIRE(second.exit_code == 0);
    const auto second_bytes = r.relay.bytes_up() - middle;
    CHECK(contains(second.out, "[rank 0] rank 0: 1,2 3,4 lr: 0.1"));
    CHECK(contains(second.out, "[rank 1] rank 1: 1,2 3,4 lr: 0.1"));
    CHECK(second_bytes < first_bytes - blob.size());
    CHECK(second_bytes < 100 * 1024);

    // Each job has its own copy of the workdir: a job's writes are not the next job's files.
    auto writer = lab.task("writer", "name: uploads-writer\nworkdir: project\nrun: echo changed > train.py\n");
    REQUIRE(lab.tandem({"launch", writer}).exit_code == 0);
    auto reader = lab.task("reader", "name: uploads-reader\nworkdir: project\nrun: cat train.py\n");
    auto read_back = lab.tandem({"launch", reader});
    CHECK(contains(read_back.out, "print('train')"));
    std::error_code ec;
    fs::remove_all("/tmp/tandem-fm-" + tag, ec);
    fs::remove_all(slurm_env().at("SLURM_USER_HOME") + "/fm-" + tag, ec);
}

TEST_CASE("ssh: an upload cut halfway fails the job before it starts, with one clear line") {
    RelayLab r;
    auto& lab = r.lab;
    const std::string blob = random_bytes(24 * 1024 * 1024, std::random_device{}());
    lab.home.write("cut/blob.bin", blob);
    const std::string name = "upload-cut-" + std::to_string(::getpid());
    auto file = lab.task("cut", "name: " + name + "\nworkdir: cut\nrun: sha256sum blob.bin | cut -c1-16\n");
    const auto start = r.relay.bytes_up();
    std::atomic<bool> done{false};
    std::thread cutter([&] {
        while (!done && r.relay.bytes_up() - start < 4 * 1024 * 1024) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        r.relay.cut_all();
    });
    auto cut = lab.tandem({"launch", file});
    done = true;
    cutter.join();
    INFO(cut);
    CHECK(cut.exit_code == 5); // unavailable: the connection was lost
    auto errors = cut.err_lines_starting("tandem: error: ");
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "uploading workdir"));
    CHECK_FALSE(contains(cut.err, "may have taken it")); // the upload comes before sbatch: nothing to find
    CHECK(slurm_jobs_named(name).empty());               // nothing reached Slurm
    auto job = lab.job(1);
    CHECK(job["state"] == "FAILED");
    CHECK(contains(job["reason"].get<std::string>(), "uploading workdir"));

    // Nothing half-sent looks complete: the next launch sends it all and the job reads every byte.
    auto again = lab.tandem({"launch", file});
    INFO(again);
    REQUIRE(again.exit_code == 0);
    CHECK(contains(again.out, run_shell("sha256sum \"$0\" | cut -c1-16", lab.home.root() + "/cut/blob.bin")));
}

TEST_CASE("ssh: tandem exec returns stdout, stderr and exit codes exactly, on the node asked") {
    SshLab lab;
    auto file = lab.task("beside", "name: exec-beside\nnum_nodes: 2\nconfig:\n  slurm:\n    partition: cpu\n"
                                   "run: sleep 300\n");
    auto launched = lab.tandem({"launch", "-d", file});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    const int id = launched_id(launched);
    lab.wait_state(id, "RUNNING");
    const std::string job = std::to_string(id);

    auto both = lab.tandem({"exec", job, "--", "sh", "-c", "echo out; echo err >&2; exit 7"});
    CHECK(both.exit_code == 7);
    CHECK(both.out == "out\n");
    CHECK(both.err == "err\n");
    auto node1 = lab.tandem({"exec", job, "--node", "1", "--", "printenv", "SLURMD_NODENAME"});
    CHECK(node1.exit_code == 0);
    CHECK(node1.out == "cpu2\n");
    auto quoted = lab.tandem({"exec", job, "--", "printf", "[%s]", "a b", "$HOME", "'q'"});
    CHECK(quoted.out == "[a b][$HOME]['q']");
    RunOptions in = lab.options;
    in.stdin_text = "line one\nline two\n";
    in.timeout = std::chrono::seconds(60);
    auto piped = lab.home.tandem({"exec", "-i", job, "--", "wc", "-l"}, in);
    CHECK(piped.exit_code == 0);
    CHECK(contains(piped.out, "2"));
    auto bad_node = lab.tandem({"exec", job, "--node", "2", "--", "true"});
    CHECK(bad_node.exit_code == 2);
    CHECK(contains(bad_node.err, "--node 2: job " + job + " has 2 node(s)"));
    CHECK(lab.tandem({"cancel", job}).exit_code == 0);
    lab.wait_terminal(id);
    auto ended = lab.tandem({"exec", job, "--", "true"});
    CHECK(ended.exit_code == 2);
    CHECK(contains(ended.err, "is CANCELLED (it has ended): nothing to run a command beside"));
}

TEST_CASE("ssh: tandem shell on a pseudo-terminal runs a command and exits with the shell's code") {
    SshLab lab;
    auto file = lab.task("shell", "name: shell-beside\nrun: sleep 300\n");
    auto launched = lab.tandem({"launch", "-d", file});
    REQUIRE(launched.exit_code == 0);
    const int id = launched_id(launched);
    lab.wait_state(id, "RUNNING");
    // The node Slurm gave the job (any node of the partition): where the shell must land too.
    auto where = lab.tandem({"exec", std::to_string(id), "--", "sh", "-c", "echo \"$SLURMD_NODENAME\""});
    REQUIRE(where.exit_code == 0);
    const std::string node = where.out.substr(0, where.out.find('\n'));
    REQUIRE_FALSE(node.empty());
    auto shell = run_in_pty(lab.options.env, {"shell", std::to_string(id)}, 123, 45,
                            "echo \"cols=$(tput cols) node=$SLURMD_NODENAME sum=$((6*7))\"; exit 5\r");
    INFO(shell.screen);
    CHECK(contains(shell.screen, "sum=42"));
    CHECK(contains(shell.screen, "cols=123"));
    CHECK(contains(shell.screen, "node=" + node + " "));
    CHECK(shell.exit_code == 5);
    lab.tandem({"cancel", std::to_string(id)});

    // Not a terminal: a clear refusal, pointing at exec.
    auto piped = lab.tandem({"shell", std::to_string(id)});
    CHECK(piped.exit_code == 2);
    CHECK(contains(piped.err, "tandem shell needs a terminal on stdin"));
}
