// `tandem dashboard`'s command-line half: its flags are checked before anything listens, and the hand-over
// to the tandem-dashboard helper fails clearly when the helper is not installed beside tandem. (The pages
// themselves: tests/integration/test_dashboard.cpp, in a real browser.)

#include <csignal>
#include <filesystem>
#include <thread>

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

using namespace tandem_test;

TEST_CASE("dashboard refuses a host that is not loopback without --expose, and bad flags", "[dashboard]") {
    TempHome t;
    auto r = t.tandem({"dashboard", "--host", "0.0.0.0"});
    INFO(r);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "tandem: error: --host 0.0.0.0 would serve every job"));
    CHECK(contains(r.err, "hint: add --expose if that is meant"));
    r = t.tandem({"dashboard", "--refresh", "1"});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "--refresh 1: the shared refresh runs every 2 to 3600 seconds"));
    r = t.tandem({"dashboard", "--port", "70000"});
    CHECK(r.exit_code == 2);
    // A broken config is said before the hand-over, as for every command.
    t.write_config("clusters: [\n");
    r = t.tandem({"dashboard"});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "config.yaml"));
}

TEST_CASE("dashboard without its helper beside tandem says where it looked", "[dashboard]") {
    TempHome t;
    const std::string lonely = t.path("bin/tandem");
    std::filesystem::create_directories(t.path("bin"));
    std::filesystem::copy_file(tandem_bin(), lonely);
    std::filesystem::permissions(lonely, std::filesystem::perms::owner_all);
    RunOptions o;
    o.env = t.base_env();
    auto r = run({lonely, "dashboard"}, o);
    INFO(r);
    CHECK(r.exit_code == 3);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "tandem: error: the dashboard's helper program is not installed: looked for " + t.path("bin") +
                              "/tandem-dashboard"));
    CHECK(contains(r.err, "hint: install tandem-dashboard beside tandem"));
}

TEST_CASE("dashboard serves on a free loopback port, prints only the URL on stdout, and ends with Ctrl-C",
          "[dashboard]") {
    TempHome t;
    const std::string out = t.path("url");
    RunOptions o;
    o.env = t.base_env();
    o.timeout = 60s;
    Child child({"/bin/sh", "-c", "exec '" + tandem_bin() + "' dashboard >'" + out + "'"}, o);
    std::string url;
    for (int i = 0; i < 200 && url.empty(); ++i) {
        if (auto text = read_file(out); text && text->find('\n') != std::string::npos) {
            url = *text;
        }
        std::this_thread::sleep_for(50ms);
    }
    child.signal_group(SIGINT);
    auto r = child.wait();
    INFO(r);
    REQUIRE_FALSE(url.empty());
    CHECK(url.rfind("http://127.0.0.1:", 0) == 0);
    CHECK(contains(url, "/?token="));
    CHECK(url.find('\n') == url.size() - 1); // one line
    CHECK(contains(r.err, "tandem: dashboard on http://127.0.0.1:"));
    CHECK(contains(r.err, "(read-only); Ctrl-C stops it"));
    CHECK_FALSE(contains(r.err, "token=")); // the token is the result, on stdout only
    CHECK(r.signal == SIGINT);
}
