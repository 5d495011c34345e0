// The SSH transport against the testbed's real sshd (scripts/testbed/slurm up): commands, SFTP, one
// handshake per host, host key refusals, key and agent logins, ~/.ssh/config, ProxyJump, and what
// happens when the server is unreachable or the connection dies under us.

#include <csignal>
#include <cstdlib>
#include <regex>
#include <thread>
#include <unistd.h>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "net/ssh_host.hpp"
#include "slurm_testbed.hpp"
#include "tcp_relay.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace tandem_test;

namespace {

struct Testbed {
    std::string host, user, key, known_hosts;
    int port = 0;
};

const Testbed& testbed_ssh() {
    static const Testbed tb = [] {
        const auto& env = slurm_env();
        return Testbed{env.at("SLURM_SSH_HOST"), env.at("SLURM_SSH_USER"), env.at("SLURM_SSH_KEY"),
                       env.at("SLURM_SSH_KNOWN_HOSTS"), std::stoi(env.at("SLURM_SSH_PORT"))};
    }();
    return tb;
}

// Sets or removes an environment variable for one test, and puts it back.
class EnvVar {
public:
    EnvVar(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) {
            m_old = old;
        }
        value ? ::setenv(name, value, 1) : ::unsetenv(name);
    }
    ~EnvVar() { m_old ? ::setenv(m_name, m_old->c_str(), 1) : ::unsetenv(m_name); }
    EnvVar(const EnvVar&) = delete;
    EnvVar& operator=(const EnvVar&) = delete;

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

SshTarget direct() {
    const auto& tb = testbed_ssh();
    SshTarget t;
    t.host = tb.host;
    t.port = tb.port;
    t.user = tb.user;
    t.identity_file = tb.key;
    t.known_hosts = tb.known_hosts;
    return t;
}

// A HOME with an empty ~/.ssh (no config, no default keys), short timeouts.
struct Local {
    TempHome home;
    SshOptions options;
    std::vector<std::string> debug;
    Local() {
        ::mkdir(home.home().c_str(), 0700);
        ::mkdir((home.home() + "/.ssh").c_str(), 0700);
        options.home = home.home();
        options.connect_timeout = std::chrono::seconds(5);
        options.io_timeout = std::chrono::seconds(10);
        options.debug = [this](const std::string& line) { debug.push_back(line); };
    }
    std::string file(const std::string& relative, const std::string& text, mode_t mode = 0600) const {
        auto path = home.write(relative, text);
        ::chmod(path.c_str(), mode);
        return path;
    }
};

std::unique_ptr<SshHost> make(const SshTarget& target, const SshOptions& options) {
    auto h = make_ssh_host(target, options);
    INFO((h ? std::string() : h.error().message));
    REQUIRE(h);
    return std::move(*h);
}

ExecResult run_ok(SshHost& host, const std::string& command, std::string_view input = {}) {
    auto r = host.exec(command, input);
    INFO(command << ": " << (r ? std::string() : r.error().message));
    REQUIRE(r);
    return *r;
}

std::string must_run(const std::vector<std::string>& argv, const EnvOverrides& env = {}) {
    auto r = run(argv, with_env(env));
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

// The testbed host key's fingerprint as ssh-keygen prints it.
std::string testbed_fingerprint() {
    auto out = must_run({"/usr/bin/ssh-keygen", "-lf", testbed_ssh().known_hosts});
    std::smatch m;
    REQUIRE(std::regex_search(out, m, std::regex("SHA256:[A-Za-z0-9+/]+")));
    return m.str();
}

// The testbed's host key line with another host name ("[127.0.0.1]:PORT").
std::string known_hosts_line_for(const std::string& name) {
    auto text = read_file(testbed_ssh().known_hosts);
    REQUIRE(text);
    auto space = text->find(' ');
    return name + text->substr(space);
}

// A folder in the remote home, removed at the end.
struct RemoteDir {
    SshHost& host;
    std::string path;
    explicit RemoteDir(SshHost& h) : host(h) {
        auto r = run_ok(h, "mktemp -d \"$HOME/tandem-ssh-it.XXXXXX\"");
        path = r.out.substr(0, r.out.find('\n'));
        REQUIRE(path.find("tandem-ssh-it.") != std::string::npos);
    }
    ~RemoteDir() { (void)host.exec("rm -rf '" + path + "'"); }
};

int closed_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

} // namespace

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

TEST_CASE("ssh host keys: an unknown host is refused with its fingerprint and how to trust it") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto target = direct();
    target.known_hosts = local.file("empty_known_hosts", "");
    auto host = make(target, local.options);
    auto r = host->exec("true");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().kind == ErrorKind::unauthorized);
    CHECK(contains(r.error().message, "is not in known_hosts"));
    CHECK(contains(r.error().message, testbed_fingerprint()));
    CHECK(contains(r.error().message, "[127.0.0.1]:" + std::to_string(testbed_ssh().port)));
    CHECK(contains(r.error().hint, "ssh-keyscan -p " + std::to_string(testbed_ssh().port) +
                                       " -t ed25519 127.0.0.1 >> " + target.known_hosts));
    CHECK(r.error().message.find('\n') == std::string::npos);
    CHECK(host->handshakes() == 0);
}

TEST_CASE("ssh host keys: a changed key is refused, a hashed entry is accepted") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    must_run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", local.home.path("other")});
    auto other = read_file(local.home.path("other.pub"));
    REQUIRE(other);
    auto target = direct();
    target.known_hosts =
        local.file("changed_known_hosts", "[127.0.0.1]:" + std::to_string(testbed_ssh().port) + " " + *other);
    auto r = make(target, local.options)->exec("true");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().kind == ErrorKind::unauthorized);
    CHECK(contains(r.error().message, "CHANGED"));
    CHECK(contains(r.error().message, testbed_fingerprint()));
    CHECK(contains(r.error().hint, "ssh-keygen -R"));

    // The right key filed for port 22 only ("127.0.0.1 ..."): not trusted for another port.
    target.known_hosts = local.file("port22_known_hosts", known_hosts_line_for("127.0.0.1"));
    auto port22 = make(target, local.options)->exec("true");
    REQUIRE_FALSE(port22);
    CHECK(contains(port22.error().message, "is not in known_hosts"));

    // The same file with the right key, hashed (HashKnownHosts yes): accepted.
    auto hashed = local.file("hashed_known_hosts", "# comment\n" + *read_file(testbed_ssh().known_hosts));
    must_run({"/usr/bin/ssh-keygen", "-q", "-H", "-f", hashed});
    CHECK(contains(*read_file(hashed), "|1|"));
    target.known_hosts = hashed;
    CHECK(run_ok(*make(target, local.options), "echo ok").out == "ok\n");
}

TEST_CASE("ssh auth: a key the server does not know is refused, naming user@host:port") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    must_run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", local.home.path("wrong")});
    auto target = direct();
    target.identity_file = local.home.path("wrong");
    auto r = make(target, local.options)->exec("true");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().kind == ErrorKind::unauthorized);
    CHECK(contains(r.error().message, direct().user + "@127.0.0.1:" + std::to_string(testbed_ssh().port)));
    CHECK(contains(r.error().message, "no key was accepted (offered: " + target.identity_file + ")"));
    CHECK_FALSE(contains(r.error().message, "PRIVATE KEY"));

    // A passphrase-protected key and no agent: refused without a prompt, with the way out.
    must_run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "long passphrase", "-f",
              local.home.path("locked")});
    target.identity_file = local.home.path("locked");
    auto locked = make(target, local.options)->exec("true");
    REQUIRE_FALSE(locked);
    CHECK(locked.error().kind == ErrorKind::unauthorized);
    CHECK(contains(locked.error().message, "needs a passphrase"));
    CHECK(contains(locked.error().hint, "ssh-add " + target.identity_file));
    CHECK_FALSE(contains(locked.error().message + locked.error().hint, "long passphrase"));
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
    bool via_agent = false;
    for (const auto& line : local.debug) {
        via_agent = via_agent || contains(line, "with an ssh-agent key");
    }
    CHECK(via_agent);
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
    bool tunnelled = false;
    for (const auto& line : local.debug) {
        tunnelled = tunnelled || contains(line, "tunnel through " + target.proxy_jump + " to 127.0.0.1:");
    }
    CHECK(tunnelled);
    RemoteDir dir(*host);
    REQUIRE(host->write(dir.path + "/f", "via jump", 0600));
    CHECK(**host->read(dir.path + "/f", 0, 100) == "via jump");
}

TEST_CASE("ssh: an unreachable server is `unavailable` at once") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    auto target = direct();
    target.port = closed_port();
    auto host = make(target, local.options);
    auto start = std::chrono::steady_clock::now();
    auto r = host->exec("true");
    REQUIRE_FALSE(r);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    CHECK(r.error().kind == ErrorKind::unavailable);
    CHECK(contains(r.error().message, "@127.0.0.1:" + std::to_string(target.port)));
    CHECK(contains(r.error().message, "Connection refused"));
}

TEST_CASE("ssh: a connection cut under us fails the next call fast, and reconnect() goes on") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    TcpRelay relay(testbed_ssh().port);
    auto target = direct();
    target.port = relay.port();
    target.known_hosts =
        local.file("kh", known_hosts_line_for("[127.0.0.1]:" + std::to_string(relay.port())));
    auto host = make(target, local.options);
    CHECK(run_ok(*host, "echo before").out == "before\n");

    relay.cut_all();
    auto start = std::chrono::steady_clock::now();
    auto r = host->exec("echo after");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
    CHECK(r.error().kind == ErrorKind::unavailable);
    CHECK(contains(r.error().message, "connection was lost"));

    // Every later call fails fast until reconnect().
    auto again = host->read("/etc/hostname", 0, 10);
    REQUIRE_FALSE(again);
    CHECK(again.error().kind == ErrorKind::unavailable);

    REQUIRE(host->reconnect());
    CHECK(run_ok(*host, "echo after").out == "after\n");
    CHECK(host->handshakes() == 2);
    CHECK(relay.accepted() == 2);
}

TEST_CASE("ssh: a connection that goes silent times out instead of hanging") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    local.options.io_timeout = std::chrono::seconds(2);
    TcpRelay relay(testbed_ssh().port);
    auto target = direct();
    target.port = relay.port();
    target.known_hosts =
        local.file("kh", known_hosts_line_for("[127.0.0.1]:" + std::to_string(relay.port())));
    auto host = make(target, local.options);
    CHECK(run_ok(*host, "echo before").out == "before\n");

    relay.freeze();
    auto start = std::chrono::steady_clock::now();
    auto r = host->read("/etc/hostname", 0, 100);
    auto elapsed = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(elapsed < std::chrono::seconds(5));
    CHECK(is_retryable(r.error().kind));

    // A handshake with a silent server is bounded by connect_timeout.
    local.options.connect_timeout = std::chrono::seconds(2);
    auto silent = make(target, local.options);
    start = std::chrono::steady_clock::now();
    auto h = silent->exec("true");
    REQUIRE_FALSE(h);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    CHECK(h.error().kind == ErrorKind::unavailable);

    relay.freeze(false);
    REQUIRE(host->reconnect());
    CHECK(run_ok(*host, "echo back").out == "back\n");
}
