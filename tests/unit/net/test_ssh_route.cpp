// From SshTarget + ~/.ssh/config to the hops tandem connects to.

#include <map>

#include <catch2/catch.hpp>

#include "net/ssh_route.hpp"

using namespace tandem;
using namespace tandem::net;

namespace {

SshConfigSource one_file(std::string text) {
    SshConfigSource s;
    s.read = [text](const std::string& path) -> Result<std::optional<std::string>> {
        if (path == "/home/me/.ssh/config") {
            return std::optional<std::string>(text);
        }
        return std::optional<std::string>();
    };
    s.glob = [](const std::string&) { return std::vector<std::string>{}; };
    return s;
}

const SshLocal local{"/home/me", "me"};

SshRoute resolve(const SshTarget& t, const std::string& config) {
    auto r = resolve_ssh_route(t, "/home/me/.ssh/config", local, one_file(config));
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r);
    return *r;
}

constexpr const char* config = "Host cluster\n"
                               "  HostName login.example.org\n"
                               "  User alice\n"
                               "  Port 2200\n"
                               "  IdentityFile ~/.ssh/%h_key\n"
                               "  ProxyJump gw\n"
                               "Host gw\n"
                               "  HostName gw.example.org\n"
                               "  User gwuser\n"
                               "  ProxyJump ignored\n";

} // namespace

TEST_CASE("ssh route: the config fills what the target leaves empty") {
    SshTarget t;
    t.host = "cluster";
    auto r = resolve(t, config);
    CHECK(r.target.host == "login.example.org");
    CHECK(r.target.user == "alice");
    CHECK(r.target.port == 2200);
    CHECK(r.target.identity_files == std::vector<std::string>{"/home/me/.ssh/login.example.org_key"});
    CHECK(r.target.known_hosts ==
          std::vector<std::string>{"/home/me/.ssh/known_hosts", "/home/me/.ssh/known_hosts2",
                                   "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"});
    REQUIRE(r.jumps.size() == 1); // gw's own ProxyJump is not followed
    CHECK(r.jumps[0].describe() == "gwuser@gw.example.org:22");
    CHECK(r.describe() == "alice@login.example.org:2200 via gwuser@gw.example.org:22");
    CHECK(r.default_identities.front() == "/home/me/.ssh/id_ed25519");
}

TEST_CASE("ssh route: explicit fields win over the config") {
    SshTarget t;
    t.host = "cluster";
    t.port = 2222;
    t.user = "bob";
    t.identity_file = "~/keys/bob";
    t.known_hosts = "/etc/tandem/known_hosts";
    t.proxy_jump = "none";
    auto r = resolve(t, config);
    CHECK(r.target.describe() == "bob@login.example.org:2222");
    CHECK(r.target.identity_files ==
          std::vector<std::string>{"/home/me/keys/bob", "/home/me/.ssh/login.example.org_key"});
    CHECK(r.target.known_hosts == std::vector<std::string>{"/etc/tandem/known_hosts"});
    CHECK(r.jumps.empty());
}

TEST_CASE(
    "ssh route: a host without config uses the local user and port 22, jumps take the cluster's files") {
    SshTarget t;
    t.host = "10.0.0.5";
    t.known_hosts = "/kh";
    t.identity_file = "/key";
    t.proxy_jump = "gw:2022,root@10.0.0.1";
    auto r = resolve(t, config);
    CHECK(r.target.describe() == "me@10.0.0.5:22");
    REQUIRE(r.jumps.size() == 2);
    CHECK(r.jumps[0].describe() == "gwuser@gw.example.org:2022");
    CHECK(r.jumps[0].known_hosts == std::vector<std::string>{"/kh"});
    CHECK(r.jumps[0].identity_files == std::vector<std::string>{"/key"});
    CHECK(r.jumps[1].describe() == "root@10.0.0.1:22");
}

TEST_CASE("ssh route: bad settings are config errors") {
    SshTarget t;
    auto r = resolve_ssh_route(t, "/home/me/.ssh/config", local, one_file(""));
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::config);
    CHECK(r.error().message == "ssh.host is empty");

    t.host = "a";
    t.proxy_jump = "gw:0";
    r = resolve_ssh_route(t, "/home/me/.ssh/config", local, one_file(""));
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "ssh.proxy_jump: `0` is not a port number (1-65535)");

    t.proxy_jump.clear();
    r = resolve_ssh_route(t, "/home/me/.ssh/config", local, one_file("Host a\n  ProxyJump x:y\n"));
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "/home/me/.ssh/config: ProxyJump of a: `y` is not a port number (1-65535)");
}
