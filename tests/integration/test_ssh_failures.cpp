// The SSH transport's refusals and failures against the testbed's real sshd: unknown, changed and
// port-mismatched host keys, keys the server rejects, an unreachable server, and connections that are
// cut or go silent under us (errors fast, never a hang, reconnect() goes on).

#include <catch2/catch.hpp>
#include <libssh2.h>

#include "ssh_test_support.hpp"
#include "tcp_relay.hpp"

using namespace tandem;
using namespace tandem::net;
using namespace tandem_test;

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

TEST_CASE("ssh: a server closing connections in the handshake (sshd's MaxStartups) is tried again, a "
          "few times") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    TcpRelay relay(testbed_ssh().port);
    auto target = direct();
    target.port = relay.port();
    target.known_hosts =
        local.file("kh", known_hosts_line_for("[127.0.0.1]:" + std::to_string(relay.port())));

    // Three closed before the banner, the fourth goes through.
    relay.close_next(3);
    auto host = make(target, local.options);
    CHECK(run_ok(*host, "echo through").out == "through\n");
    CHECK(relay.accepted() == 4);
    CHECK(host->handshakes() == 1);

    // A server that closes every connection: a bounded number of tries, then one error that says so.
    relay.close_next(1000);
    const int before = relay.accepted();
    auto start = std::chrono::steady_clock::now();
    auto closing = make(target, local.options);
    auto r = closing->exec("true");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(std::chrono::steady_clock::now() - start < local.options.connect_timeout + std::chrono::seconds(1));
    CHECK(r.error().kind == ErrorKind::unavailable);
    CHECK(contains(r.error().message, "the SSH handshake failed"));
    CHECK(contains(r.error().message, "connections in a row"));
    CHECK(contains(r.error().hint, "MaxStartups"));
    CHECK(relay.accepted() - before == 6);
    CHECK(r.error().message.find('\n') == std::string::npos);
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

TEST_CASE("ssh ProxyJump: a jump connection cut under us fails the next call fast, and reconnect() goes on") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    TcpRelay relay(testbed_ssh().port);
    auto target = direct();
    target.proxy_jump = testbed_ssh().user + "@127.0.0.1:" + std::to_string(relay.port());
    // One file for both hops: the jump host is known under the relay's port, the target under its own.
    target.known_hosts =
        local.file("kh", known_hosts_line_for("[127.0.0.1]:" + std::to_string(relay.port())) +
                             *read_file(testbed_ssh().known_hosts));
    auto host = make(target, local.options);
    CHECK(run_ok(*host, "echo before").out == "before\n");

    relay.cut_all();
    auto start = std::chrono::steady_clock::now();
    auto r = host->exec("echo after");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
    CHECK(r.error().kind == ErrorKind::unavailable);

    REQUIRE(host->reconnect());
    CHECK(run_ok(*host, "echo after").out == "after\n");
    CHECK(host->handshakes() == 2);
}

TEST_CASE("ssh auth: a refused RSA key says what libssh2 1.10 cannot do") {
    EnvVar no_agent("SSH_AUTH_SOCK", nullptr);
    Local local;
    must_run(
        {"/usr/bin/ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", local.home.path("rsa")});
    auto target = direct();
    target.identity_file = local.home.path("rsa");
    auto r = make(target, local.options)->exec("true");
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().kind == ErrorKind::unauthorized);
    if (!libssh2_version(0x010b00)) { // Debian 12 has 1.10: RSA signatures are SHA-1, refused by OpenSSH 8.8+
        CHECK(contains(r.error().message, "RSA keys cannot log in to OpenSSH 8.8+"));
        CHECK(contains(r.error().hint, "ssh-keygen -t ed25519"));
    }
}
