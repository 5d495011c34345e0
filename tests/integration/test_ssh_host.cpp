// The SSH transport against the testbed's real sshd (scripts/testbed/slurm up): commands, SFTP, one
// handshake per host, ssh-agent and ~/.ssh/config logins, ProxyJump.

#include <csignal>
#include <thread>

#include <catch2/catch.hpp>

#include "ssh_test_support.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace tandem_test;

TEST_CASE("ssh exec: stdout, stderr and exit codes are kept apart") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto host = make(direct(), local.options);
    CHECK(host->describe() ==
          testbed_ssh().user + "@" + testbed_ssh().host + ":" + std::to_string(testbed_ssh().port));
    CHECK(host->handshakes() == 0); // lazily connected

    auto r = run_ok(*host, "echo out; echo err >&2; exit 3");
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
    CHECK(r.exit_status == 3);

    CHECK(run_ok(*host, "true").exit_status == 0);
    CHECK(run_ok(*host, "kill -KILL $$").exit_status == 128 + 9);
    CHECK(run_ok(*host, "whoami").out == testbed_ssh().user + "\n");
    CHECK(run_ok(*host, "cat", "typed input").out == "typed input");
    CHECK(host->handshakes() == 1);
}

TEST_CASE("ssh exec: 1 MB of stdin, 3 MB of stdout, and both at once") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto host = make(direct(), local.options);
    std::string mb(1024 * 1024, 'a');
    for (std::size_t i = 0; i < mb.size(); i += 997) {
        mb[i] = static_cast<char>('a' + i % 26);
    }
    CHECK(run_ok(*host, "wc -c", mb).out == "1048576\n");

    auto big = run_ok(*host, "head -c 3000000 /dev/zero | tr '\\0' x");
    CHECK(big.out.size() == 3000000);
    CHECK(big.out.find_first_not_of('x') == std::string::npos);

    // More than libssh2's 2 MB window each way: needs input and output interleaved, or it deadlocks.
    std::string three = mb + mb + mb;
    auto echo = run_ok(*host, "cat", three);
    CHECK(echo.out.size() == three.size());
    CHECK(echo.out == three);

    // A command that does not read its input still finishes.
    CHECK(run_ok(*host, "exit 4", three).exit_status == 4);
}

TEST_CASE("ssh: ten commands and SFTP reads share one handshake") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto host = make(direct(), local.options);
    RemoteDir dir(*host);
    REQUIRE(host->write(dir.path + "/f", "hello", 0600));
    for (int i = 0; i < 10; ++i) {
        CHECK(run_ok(*host, "echo " + std::to_string(i)).out == std::to_string(i) + "\n");
        auto data = host->read(dir.path + "/f", 0, 100);
        REQUIRE(data);
        CHECK(*data == std::optional<std::string>("hello"));
    }
    CHECK(host->handshakes() == 1);
}

TEST_CASE("ssh sftp: write with a mode, make_dirs, stat, and reads at offsets of a growing file") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto host = make(direct(), local.options);
    RemoteDir dir(*host);

    const std::string deep = dir.path + "/a/b/c";
    REQUIRE(host->make_dirs(deep));
    REQUIRE(host->make_dirs(deep)); // again: nothing to do
    auto info = host->stat(dir.path + "/a/b");
    REQUIRE(info);
    REQUIRE(*info);
    CHECK((*info)->is_dir);
    CHECK(run_ok(*host, "stat -c %a '" + dir.path + "/a'").out == "700\n");

    const std::string file = deep + "/script.sh";
    REQUIRE(host->write(file, "#!/bin/sh\necho ran\n", 0700));
    CHECK(run_ok(*host, "'" + file + "'").out == "ran\n");
    CHECK(run_ok(*host, "stat -c %a '" + file + "'").out == "700\n");
    // Rewriting an existing file truncates it and sets the new mode.
    REQUIRE(host->write(file, "x", 0600));
    CHECK(run_ok(*host, "stat -c '%a %s' '" + file + "'").out == "600 1\n");

    auto not_dir = host->make_dirs(file + "/sub");
    REQUIRE_FALSE(not_dir);
    CHECK(contains(not_dir.error().message, "exists and is not a folder"));

    auto missing = host->stat(dir.path + "/nope");
    REQUIRE(missing);
    CHECK_FALSE(*missing);
    auto missing_read = host->read(dir.path + "/nope", 0, 10);
    REQUIRE(missing_read);
    CHECK_FALSE(*missing_read);
    auto no_folder = host->write(dir.path + "/nope/f", "x", 0600);
    REQUIRE_FALSE(no_folder);
    CHECK(no_folder.error().kind == ErrorKind::remote);

    // A log that grows between reads, read from where the last read stopped.
    const std::string log = dir.path + "/out.log";
    run_ok(*host, "printf 'line1\\nline2\\n' > '" + log + "'");
    auto first = host->read(log, 0, 1 << 20);
    REQUIRE(first);
    REQUIRE(*first);
    CHECK(**first == "line1\nline2\n");
    std::uint64_t offset = (*first)->size();
    auto none = host->read(log, offset, 1 << 20);
    REQUIRE(none);
    CHECK(**none == "");
    run_ok(*host, "printf 'line3\\n' >> '" + log + "'");
    auto next = host->read(log, offset, 1 << 20);
    REQUIRE(next);
    CHECK(**next == "line3\n");
    auto limited = host->read(log, 2, 3);
    REQUIRE(limited);
    CHECK(**limited == "ne1");
    auto st = host->stat(log);
    REQUIRE(st);
    CHECK((*st)->size == 18);
    CHECK((*st)->mtime > 1'600'000'000);

    // A big file, written and read back whole.
    std::string big(700 * 1000, 'z');
    big[123456] = 'Q';
    REQUIRE(host->write(dir.path + "/big", big, 0600));
    auto back = host->read(dir.path + "/big", 0, UINT64_MAX);
    REQUIRE(back);
    CHECK(**back == big);
    CHECK(host->handshakes() == 1);
}

TEST_CASE("ssh auth: a key held by ssh-agent, with no identity file") {
    Local local;
    const std::string sock = local.home.path("agent.sock");
    Child agent({"/usr/bin/ssh-agent", "-D", "-a", sock}, RunOptions{{}, "", 60s, "", {}});
    for (int i = 0; i < 100 && !file_exists(sock); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE(file_exists(sock));
    must_run({"/usr/bin/ssh-add", "-q", testbed_ssh().key}, {{"SSH_AUTH_SOCK", sock}});
    EnvVar agent_sock("SSH_AUTH_SOCK", sock.c_str());
    auto target = direct();
    target.identity_file.clear();
    auto host = make(target, local.options);
    CHECK(run_ok(*host, "whoami").out == testbed_ssh().user + "\n");
    CHECK(local.debug_has("with an ssh-agent key"));
    agent.signal_group(SIGTERM);
}

TEST_CASE("ssh config: a Host alias gives HostName, Port, User, IdentityFile and known_hosts") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    const auto& tb = testbed_ssh();
    local.file("home/.ssh/config", "Host *\n  ServerAliveInterval 30\n"
                                   "Host testbed-login\n"
                                   "  HostName " +
                                       tb.host +
                                       "\n"
                                       "  Port " +
                                       std::to_string(tb.port) +
                                       "\n"
                                       "  User " +
                                       tb.user +
                                       "\n"
                                       "  IdentityFile " +
                                       tb.key +
                                       "\n"
                                       "  UserKnownHostsFile " +
                                       tb.known_hosts + "\n");
    SshTarget target;
    target.host = "testbed-login";
    auto host = make(target, local.options);
    CHECK(host->describe() == tb.user + "@" + tb.host + ":" + std::to_string(tb.port));
    CHECK(run_ok(*host, "whoami").out == tb.user + "\n");

    // The explicit port wins over the config: nothing listens there.
    target.port = closed_port();
    auto r = make(target, local.options)->exec("true");
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::unavailable);
}

TEST_CASE("ssh ProxyJump: through the jump host to the target, one target handshake") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto target = direct();
    target.proxy_jump = testbed_ssh().user + "@127.0.0.1:" + std::to_string(testbed_ssh().port);
    auto host = make(target, local.options);
    for (int i = 0; i < 3; ++i) {
        CHECK(run_ok(*host, "echo hop").out == "hop\n");
    }
    CHECK(host->handshakes() == 1);
    auto big = run_ok(*host, "head -c 2500000 /dev/zero | tr '\\0' y");
    CHECK(big.out.size() == 2500000);
    CHECK(local.debug_has("tunnel through " + target.proxy_jump + " to 127.0.0.1:"));
    RemoteDir dir(*host);
    REQUIRE(host->write(dir.path + "/f", "via jump", 0600));
    CHECK(**host->read(dir.path + "/f", 0, 100) == "via jump");
}
