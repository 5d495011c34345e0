// Slurm over SSH when things go wrong: a changed host key, a key the server does not accept, sshd not
// reachable, and the connection cut while `logs -f` follows a job. Each is one clear line (or a
// recovery), never a hang.

#include <fstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_slurm_ssh_support.hpp"

using namespace tandem_test;

namespace {

// A fresh ed25519 key pair under `dir`; returns the private key's path.
std::string fresh_key(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    auto r = run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return path;
}

} // namespace

TEST_CASE("ssh: a changed host key is refused with its fingerprint and how to trust it") {
    SshLab lab;
    const int id =
        launched_id(lab.tandem({"launch", "-d", lab.task("quick", "name: ssh-quick\nrun: echo hi\n")}));
    const std::string key = fresh_key(lab.home.root(), "other_host_key");
    auto pub = read_file(key + ".pub");
    REQUIRE(pub);
    const std::string known =
        lab.home.write("wrong_known_hosts", "[127.0.0.1]:" + slurm_env().at("SLURM_SSH_PORT") + " " +
                                                pub->substr(0, pub->rfind(' ')) + "\n");
    lab.configure(SshTargetOverrides{"", "", known, ""});
    auto r = lab.tandem({"check"});
    INFO(r);
    CHECK(r.exit_code == 4);
    CHECK(contains(r.out, "host key has CHANGED"));
    CHECK(contains(r.out, "SHA256:"));
    auto launch = lab.tandem({"launch", "-d", lab.task("any", "run: echo hi\n"), "--infra", "slurm"});
    INFO(launch);
    CHECK(launch.exit_code == 4);
    REQUIRE(launch.err_lines_starting("tandem: error: ").size() == 1);
    CHECK(contains(launch.err, "SHA256:"));
    CHECK(contains(launch.err, "hint:"));
    CHECK(contains(launch.err, "ssh-keygen -R")); // the planner passes the backend's hint on
    // A command that asks the backend directly shows the hint (ssh-keygen -R, ssh-keyscan).
    auto logs = lab.tandem({"logs", std::to_string(id)});
    INFO(logs);
    CHECK(logs.exit_code == 4);
    REQUIRE(logs.err_lines_starting("tandem: error: ").size() == 1);
    CHECK(contains(logs.err, "SHA256:"));
    CHECK(contains(logs.err, "hint:"));
    CHECK(contains(logs.err, "ssh-keygen -R"));
}

TEST_CASE("ssh: a key the server does not accept is a one-line unauthorized error") {
    SshLab probe;
    const std::string key = fresh_key(probe.home.root(), "stranger");
    SshLab lab(SshTargetOverrides{"", key, "", ""});
    auto r = lab.tandem({"launch", "-d", lab.task("any", "run: echo hi\n"), "--infra", "slurm"});
    INFO(r);
    CHECK(r.exit_code == 4);
    auto errors = r.err_lines_starting("tandem: error: ");
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "lab"));
    CHECK(contains(errors[0], "slurmtest@127.0.0.1"));
    auto priv = read_file(key);
    REQUIRE(priv);
    CHECK_FALSE(contains(r.err, priv->substr(40, 30))); // no key material in any message
}

TEST_CASE(
    "ssh: sshd unreachable gives a one-line error, and status shows UNKNOWN with the last known state") {
    SshLab lab;
    auto file = lab.task("long", "name: ssh-long\nrun: sleep 120\n");
    const int id = launched_id(lab.tandem({"launch", "-d", file}));
    REQUIRE(lab.wait_state(id, "RUNNING")["state"] == "RUNNING");

    lab.configure(SshTargetOverrides{std::to_string(closed_port()), "", "", ""});
    auto launch = lab.tandem({"launch", "-d", file, "--infra", "slurm"}, 60s);
    auto status = lab.tandem({"status"}, 60s);
    auto as_json = lab.tandem({"status", std::to_string(id), "--json"}, 60s);
    lab.configure(SshTargetOverrides{});

    INFO(launch);
    CHECK(launch.exit_code == 5);
    CHECK(launch.err_lines_starting("tandem: error: ").size() == 1);
    CHECK(launch.elapsed < 30s);
    INFO(status);
    CHECK(status.exit_code == 0);
    CHECK(contains(status.out, "UNKNOWN (was RUNNING"));
    auto parsed = nlohmann::json::parse(as_json.out);
    CHECK(parsed["jobs"][0]["state"] == "UNKNOWN");
    CHECK(parsed["jobs"][0]["last_known_state"] == "RUNNING");
    CHECK(contains(parsed["jobs"][0]["reason"].get<std::string>(), "lab"));

    CHECK(lab.job(id)["state"] == "RUNNING"); // reachable again
    CHECK(lab.tandem({"cancel", std::to_string(id)}).exit_code == 0);
}

TEST_CASE("ssh: the connection cut during logs -f is made again and the output goes on") {
    CuttableProxy proxy(std::stoi(slurm_env().at("SLURM_SSH_PORT")));
    // known_hosts names [127.0.0.1]:2222; the proxy's port needs the same key under its own name.
    SshLab probe;
    auto known = read_file(slurm_env().at("SLURM_SSH_KNOWN_HOSTS"));
    REQUIRE(known);
    std::string line = known->substr(0, known->find('\n'));
    line = "[127.0.0.1]:" + std::to_string(proxy.port()) + line.substr(line.find(' '));
    const std::string known_file = probe.home.write("proxy_known_hosts", line + "\n");
    SshLab lab(SshTargetOverrides{std::to_string(proxy.port()), "", known_file, ""});
    auto file =
        lab.task("ticks", "name: ssh-ticks\nrun: for i in $(seq 1 12); do echo tick-$i; sleep 0.5; done\n");
    const int id = launched_id(lab.tandem({"launch", "-d", file}));
    StreamingTandem follow(lab, {"logs", std::to_string(id), "-f"});
    REQUIRE(follow.wait_line("tick-2", 60s));
    const int before = proxy.connections();
    proxy.cut();
    const int code = follow.wait_exit(90s);
    INFO(follow.all_out() << follow.all_err());
    CHECK(code == 0); // went on to the end: the job SUCCEEDED
    CHECK(proxy.connections() > before);
    const auto out = follow.all_out();
    for (int i = 1; i <= 12; ++i) {
        CHECK(contains(out, "tick-" + std::to_string(i) + "\n"));
    }
}

TEST_CASE("ssh: config errors name the file, line, column and field") {
    SshLab lab;
    const auto file = lab.task("any", "run: echo hi\n");
    struct Case {
        std::string settings, field, words;
    };
    for (const auto& c : std::vector<Case>{
             {"    ssh:\n      host: h\n      port: \"99999\"\n", "ssh.port", "'99999' is not a port"},
             {"    ssh:\n      port: \"22\"\n", "ssh.host", "is required"},
             {"    ssh:\n      host: h\n      hots: x\n", "ssh.hots", "unknown setting"},
             {"    ssh:\n      host: \"-oProxyCommand=touch x\"\n", "ssh.host",
              "'-oProxyCommand=touch x' is not a host name"},
             {"    ssh:\n      host: h\n    workdir_limit_mb: \"lots\"\n", "workdir_limit_mb", ""},
             {"    home: /x\n", "rest",
              "a slurm cluster needs rest: (slurmrestd), ssh: (a login node), or both"},
         }) {
        lab.home.write_config("clusters:\n  - name: lab\n    type: slurm\n"
                              "    discover_jobs: false\n" +
                              c.settings);
        auto check = lab.tandem({"check"}); // a table row per cluster
        INFO(check);
        CHECK(check.exit_code == 2);
        CHECK(contains(check.out, "config.yaml:2:5:"));
        auto r = lab.tandem({"launch", "-d", file});
        INFO(r);
        CHECK(r.exit_code == 2);
        auto errors = r.err_lines_starting("tandem: error: ");
        REQUIRE(errors.size() == 1);
        CHECK(contains(errors[0], "config.yaml:2:5: clusters.lab." + c.field + ": " + c.words));
    }
}
