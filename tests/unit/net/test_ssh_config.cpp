// The OpenSSH client config parser, ProxyJump lists and %-token expansion, on in-memory files.

#include <fnmatch.h>
#include <map>

#include <catch2/catch.hpp>

#include "net/ssh_config.hpp"

using namespace tandem;
using namespace tandem::net;

namespace {

struct Files {
    std::map<std::string, std::string> files;

    SshConfigSource source() const {
        SshConfigSource s;
        s.read = [this](const std::string& path) -> Result<std::optional<std::string>> {
            auto it = files.find(path);
            if (it == files.end()) {
                return std::optional<std::string>();
            }
            return std::optional<std::string>(it->second);
        };
        s.glob = [this](const std::string& pattern) {
            std::vector<std::string> out;
            for (const auto& [path, text] : files) {
                if (::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0) {
                    out.push_back(path);
                }
            }
            return out;
        };
        return s;
    }

    SshHostConfig lookup(const std::string& host) const {
        auto r = lookup_ssh_config("/h/.ssh/config", host, "/h/.ssh", source());
        INFO((r ? std::string() : r.error().message));
        REQUIRE(r);
        return *r;
    }
};

} // namespace

TEST_CASE("ssh patterns: * and ? match whole names, case-insensitively") {
    CHECK(ssh_pattern_match("*", "anything"));
    CHECK(ssh_pattern_match("login?.example.org", "login1.example.org"));
    CHECK_FALSE(ssh_pattern_match("login?.example.org", "login12.example.org"));
    CHECK(ssh_pattern_match("*.EXAMPLE.org", "a.b.example.ORG"));
    CHECK_FALSE(ssh_pattern_match("*.example.org", "example.org"));
    CHECK(ssh_pattern_match("a*b*c", "aXXbYYc"));
    CHECK_FALSE(ssh_pattern_match("a*b*c", "aXXbYY"));
    CHECK(ssh_host_patterns_match({"*.lab", "!gw.lab"}, "node.lab"));
    CHECK_FALSE(ssh_host_patterns_match({"*.lab", "!gw.lab"}, "gw.lab"));
    CHECK_FALSE(ssh_host_patterns_match({"!gw.lab"}, "other")); // a negation alone matches nothing
}

TEST_CASE("ssh config: the first value obtained wins, IdentityFile adds up") {
    Files f;
    f.files["/h/.ssh/config"] = "# comment\n"
                                "Host cluster\n"
                                "    HostName login.example.org\n"
                                "    User alice\n"
                                "    Port 2200\n"
                                "    IdentityFile ~/.ssh/cluster_key\n"
                                "\n"
                                "Host *\n"
                                "    User nobody\n"
                                "    Port 22\n"
                                "    IdentityFile ~/.ssh/id_ed25519\n"
                                "    StrictHostKeyChecking accept-new\n";
    auto c = f.lookup("cluster");
    CHECK(c.hostname == "login.example.org");
    CHECK(c.user == "alice");
    CHECK(c.port == 2200);
    CHECK(c.identity_files == std::vector<std::string>{"~/.ssh/cluster_key", "~/.ssh/id_ed25519"});
    CHECK(c.strict_host_key_checking == "accept-new");

    auto other = f.lookup("elsewhere");
    CHECK_FALSE(other.hostname);
    CHECK(other.user == "nobody");
    CHECK(other.port == 22);
}

TEST_CASE("ssh config: keywords in any case, Key=Value, quoted values, unknown keywords ignored") {
    Files f;
    f.files["/h/.ssh/config"] = "HOST gpu\n"
                                "  hostname=gpu.example.org\n"
                                "  USER = bob\n"
                                "  IdentityFile \"/keys/my key\"\n"
                                "  ForwardAgent yes\n"
                                "  ServerAliveInterval 30\n"
                                "  UserKnownHostsFile /k/one /k/two\n"
                                "  ProxyJump gw.example.org\n";
    auto c = f.lookup("GPU");
    CHECK(c.hostname == "gpu.example.org");
    CHECK(c.user == "bob");
    CHECK(c.identity_files == std::vector<std::string>{"/keys/my key"});
    CHECK(c.known_hosts_files == std::vector<std::string>{"/k/one", "/k/two"});
    CHECK(c.proxy_jump == "gw.example.org");
}

TEST_CASE("ssh config: negated patterns and Match blocks") {
    Files f;
    f.files["/h/.ssh/config"] = "Host *.lab !gw.lab\n"
                                "  ProxyJump gw.lab\n"
                                "Match host other.lab,x.lab\n"
                                "  User matched\n"
                                "Match exec \"true\"\n"
                                "  User never\n"
                                "Match all\n"
                                "  Port 2022\n";
    CHECK(f.lookup("node.lab").proxy_jump == "gw.lab");
    CHECK_FALSE(f.lookup("gw.lab").proxy_jump);
    CHECK(f.lookup("x.lab").user == "matched");
    CHECK_FALSE(f.lookup("y.lab").user); // Match exec is not evaluated, so it never matches
    CHECK(f.lookup("y.lab").port == 2022);
}

TEST_CASE("ssh config: Include is relative to ~/.ssh, takes globs, and is read in place") {
    Files f;
    f.files["/h/.ssh/config"] = "Include config.d/*\n"
                                "Host a\n"
                                "  User from-main\n"
                                "  Include extra\n"
                                "  ProxyJump after-include\n";
    f.files["/h/.ssh/config.d/10-lab"] = "Host a\n  HostName a.lab\n";
    f.files["/h/.ssh/config.d/20-more"] = "Host a\n  HostName ignored.lab\n  Port 1234\n";
    f.files["/h/.ssh/extra"] = "IdentityFile ~/.ssh/extra_key\nHost b\n  User b-user\n";
    auto a = f.lookup("a");
    CHECK(a.hostname == "a.lab");
    CHECK(a.port == 1234);
    CHECK(a.user == "from-main");
    CHECK(a.identity_files == std::vector<std::string>{"~/.ssh/extra_key"});
    CHECK(a.proxy_jump == "after-include"); // extra's `Host b` ends at the end of extra
    // The Include sits in `Host a`, so for b it is not read at all (as OpenSSH does).
    CHECK_FALSE(f.lookup("b").user);
    CHECK(f.lookup("b").identity_files.empty());
}

TEST_CASE("ssh config: errors name file:line") {
    Files f;
    f.files["/h/.ssh/config"] = "Host a\n  Port twenty\n";
    auto r = lookup_ssh_config("/h/.ssh/config", "a", "/h/.ssh", f.source());
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::config);
    CHECK(r.error().message == "/h/.ssh/config:2: Port: `twenty` is not a port number (1-65535)");

    f.files["/h/.ssh/config"] = "Host a\n  IdentityFile \"/unclosed\n";
    r = lookup_ssh_config("/h/.ssh/config", "a", "/h/.ssh", f.source());
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "/h/.ssh/config:2: identityfile: a double quote is not closed");

    f.files["/h/.ssh/config"] = "Include config\n"; // includes itself
    r = lookup_ssh_config("/h/.ssh/config", "a", "/h/.ssh", f.source());
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("nested more than 16 deep") != std::string::npos);
}

TEST_CASE("ssh config: a missing file is an empty config") {
    Files f;
    auto c = f.lookup("a");
    CHECK_FALSE(c.hostname);
    CHECK(c.identity_files.empty());
}

TEST_CASE("ProxyJump lists") {
    auto j = parse_proxy_jump("alice@gw.example.org:2200,ssh://bob@[::1]:22,bastion", "ProxyJump");
    REQUIRE(j);
    REQUIRE(j->size() == 3);
    CHECK((*j)[0].user == "alice");
    CHECK((*j)[0].host == "gw.example.org");
    CHECK((*j)[0].port == 2200);
    CHECK((*j)[1].user == "bob");
    CHECK((*j)[1].host == "::1");
    CHECK((*j)[1].port == 22);
    CHECK((*j)[2].user.empty());
    CHECK((*j)[2].host == "bastion");
    CHECK((*j)[2].port == 0);

    auto none = parse_proxy_jump("NONE", "ProxyJump");
    REQUIRE(none);
    CHECK(none->empty());

    auto bad = parse_proxy_jump("gw:99999", "ssh.proxy_jump");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == ErrorKind::config);
    CHECK(bad.error().message == "ssh.proxy_jump: `99999` is not a port number (1-65535)");
    CHECK_FALSE(parse_proxy_jump("u@[::1", "x"));
    CHECK_FALSE(parse_proxy_jump(",", "x"));
}

TEST_CASE("%-tokens and ~ in paths") {
    SshTokens t{"login.lab", "me", "alice", 2200, "/home/me"};
    CHECK(expand_ssh_path("~/.ssh/id_%h_%r", t, "IdentityFile") == "/home/me/.ssh/id_login.lab_alice");
    CHECK(expand_ssh_path("%d/k/%u-%p-100%%", t, "IdentityFile") == "/home/me/k/me-2200-100%");
    CHECK(expand_ssh_path("/abs/~notilde", t, "IdentityFile") == "/abs/~notilde");
    auto bad = expand_ssh_path("~/.ssh/%C", t, "IdentityFile");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("%C") != std::string::npos);
    CHECK_FALSE(expand_ssh_path("trailing%", t, "IdentityFile"));
}
