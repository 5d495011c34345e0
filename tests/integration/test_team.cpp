// The clusters are the record (issue 31), against the real testbeds: homes with discovery on, as a team
// uses them. A job launched from one TANDEM_HOME is listed, followed and cancelled from a second, empty
// one (Slurm over slurmrestd, Slurm over SSH, Kubernetes); a wiped job store finds its running jobs and
// groups again; another cluster user's jobs are shown with --all-users and never adopted, not even one
// whose comment claims to be yours.
//
// Discovery adopts every job of the test user tandem made, so these homes see other tests' jobs too:
// every check here looks for its own job by remote id, and nothing here cancels what it did not launch.

#include <cstdio>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"
#include "slurm_testbed.hpp"

using namespace tandem_test;
using nlohmann::json;

namespace {

enum class Where { slurm_rest, slurm_ssh, k8s, both };

const char* where_name(Where w) {
    switch (w) {
    case Where::slurm_rest:
        return "slurm over slurmrestd";
    case Where::slurm_ssh:
        return "slurm over ssh";
    case Where::k8s:
        return "kubernetes";
    case Where::both:
        return "slurm and kubernetes";
    }
    return "?";
}

// A home with discovery on (the default): `lab` (Slurm) and/or `k8s`, as the test user, or as the
// testbeds' second user (`other`).
struct TeamHome {
    TempHome home;
    RunOptions options;

    explicit TeamHome(Where where, bool other = false) {
        const auto& s = slurm_env();
        const std::string user = other ? s.at("SLURM_OTHER_USER") : s.at("SLURM_JWT_USER");
        const std::string user_home = other ? s.at("SLURM_OTHER_USER_HOME") : s.at("SLURM_USER_HOME");
        std::string config = "clusters:\n";
        if (where == Where::slurm_rest || where == Where::both) {
            config += "  - name: lab\n    type: slurm\n    rest:\n      url: " + s.at("SLURM_REST_URL") +
                      "\n      user: " + user + "\n      token_env: SLURM_JWT\n" + rest_api_pin_line() +
                      default_partition_line() + "    home: " + user_home + "\n";
        }
        if (where == Where::slurm_ssh) {
            config += "  - name: lab\n    type: slurm\n    ssh:\n      host: " + s.at("SLURM_SSH_HOST") +
                      "\n      port: \"" + s.at("SLURM_SSH_PORT") + "\"\n      user: " + user +
                      "\n      identity_file: " + s.at("SLURM_SSH_KEY") +
                      "\n      known_hosts: " + s.at("SLURM_SSH_KNOWN_HOSTS") + "\n"; // home: asked of the login node
        }
        if (where == Where::k8s || where == Where::both) {
            config += "  - name: k8s\n    type: kubernetes\n    kubeconfig: " +
                      k8s_setting(other ? "K8S_KUBECONFIG_EXEC" : "K8S_KUBECONFIG_CERT") +
                      "\n    namespace: " + k8s_setting("K8S_NAMESPACE") + "\n";
        }
        home.write_config(config);
        options.env = home.base_env();
        options.env["SLURM_JWT"] = other ? s.at("SLURM_OTHER_JWT") : s.at("SLURM_JWT");
        options.env["SSH_AUTH_SOCK"] = std::nullopt;
    }

    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const {
        RunOptions o = options;
        o.timeout = timeout;
        return home.tandem(args, o);
    }
    Child start(const std::vector<std::string>& args) const {
        RunOptions o = options;
        o.timeout = 120s;
        return home.start_tandem(args, o);
    }
    int launch(const std::string& file) const {
        auto r = tandem({"launch", "-d", file});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return std::stoi(r.out);
    }
    json job(int id) const {
        auto r = tandem({"status", std::to_string(id), "--json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out)["jobs"][0];
    }
    // `status --json` (discovery and all); fails the test unless it exits 0.
    json status(const std::vector<std::string>& extra = {}) const {
        std::vector<std::string> args{"status", "--json"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto r = tandem(args);
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out);
    }
    // Polls `status ID` until the job is in `state` (or has ended) or `limit` passes.
    json wait_state(int id, const std::string& state, std::chrono::milliseconds limit = 120s) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        json j = job(id);
        while (j["state"] != state && !is_terminal_state(j["state"].get<std::string>()) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(500ms);
            j = job(id);
        }
        return j;
    }
    void wipe_store() const {
        for (const char* suffix : {"", "-wal", "-shm"}) {
            std::remove((home.state_dir() + "/jobs.db" + suffix).c_str());
        }
    }
};

// The job (or group) `status --json` lists with remote id `remote` (a group: by one member's), or null.
json listed_with(const json& status, const std::string& key, const std::string& remote) {
    for (const auto& j : status.value(key, json::array())) {
        if (j.value("remote_id", "") == remote) {
            return j;
        }
        for (const auto& m : j.value("members", json::array())) {
            if (m.value("remote_id", "") == remote) {
                return j;
            }
        }
    }
    return nullptr;
}

std::string task_file(const TeamHome& h, const std::string& name, const std::string& infra) {
    return h.home.write(name + ".yaml", "name: " + name + "\nresources: {infra: " + infra +
                                            "}\nrun: |\n  echo hello from " + name +
                                            "\n  sleep 300\n");
}

std::string infra_of(Where w) {
    return w == Where::k8s ? "k8s" : "slurm";
}

} // namespace

TEST_CASE("a job launched from one home is followed and cancelled from an empty one, and the first sees it") {
    const Where where = GENERATE(Where::slurm_rest, Where::slurm_ssh, Where::k8s);
    INFO(where_name(where));
    TeamHome first(where), second(where);
    const std::string name = unique_name("team");
    const int id = first.launch(task_file(first, name, infra_of(where)));
    const json launched = first.wait_state(id, "RUNNING");
    REQUIRE(launched["state"] == "RUNNING");
    const std::string remote = launched["remote_id"];

    // The second home has never heard of it: status finds it on the cluster and adopts it.
    auto r = second.tandem({"status", "--json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "launched elsewhere, found on the cluster"));
    const json found = listed_with(json::parse(r.out), "jobs", remote);
    REQUIRE(found.is_object());
    CHECK(found["name"] == name);
    CHECK(found["state"] == "RUNNING");
    const int adopted = found["id"];
    // Adopted once: the next status lists it under the same id.
    CHECK(listed_with(second.status(), "jobs", remote)["id"] == adopted);

    // exec beside it works from the second home (Slurm over SSH: srun on the login node; Kubernetes:
    // pods/exec); slurmrestd alone runs no interactive steps.
    if (where != Where::slurm_rest) {
        auto exec = second.tandem({"exec", std::to_string(adopted), "--", "echo", "beside-it"});
        INFO(exec);
        CHECK(exec.exit_code == 0);
        CHECK(contains(exec.out, "beside-it"));
    }

    // Followed from the second home, and cancelled from there: the follow ends, the first home sees it.
    Child follow = second.start({"logs", "-f", std::to_string(adopted)});
    std::this_thread::sleep_for(3s);
    auto cancel = second.tandem({"cancel", std::to_string(adopted)});
    INFO(cancel);
    CHECK(cancel.exit_code == 0);
    auto followed = follow.wait();
    INFO(followed);
    CHECK(contains(followed.out, "hello from " + name));
    CHECK(second.job(adopted)["state"] == "CANCELLED");
    const json seen = first.wait_state(id, "CANCELLED", 60s);
    CHECK(seen["state"] == "CANCELLED");
}

TEST_CASE("a wiped job store finds its running job again") {
    const Where where = GENERATE(Where::slurm_rest, Where::slurm_ssh, Where::k8s);
    INFO(where_name(where));
    TeamHome home(where);
    const std::string name = unique_name("wiped");
    const int id = home.launch(task_file(home, name, infra_of(where)));
    const json before = home.wait_state(id, "RUNNING");
    REQUIRE(before["state"] == "RUNNING");
    const std::string remote = before["remote_id"];
    home.wipe_store();
    const json again = listed_with(home.status(), "jobs", remote);
    REQUIRE(again.is_object());
    CHECK(again["name"] == name);
    CHECK(again["state"] == "RUNNING");
    auto cancel = home.tandem({"cancel", std::to_string(again["id"].get<int>())});
    INFO(cancel);
    CHECK(cancel.exit_code == 0);
}

TEST_CASE("a wiped store finds a group across Slurm and Kubernetes whole, and cancel empties both") {
    TeamHome home(Where::both);
    const std::string name = unique_name("team-group");
    const auto file = home.home.write(
        "g.yaml", "name: " + name + "\nexecution: parallel\n---\n"
                  "name: on-slurm\nresources: {infra: slurm}\nrun: sleep 300\n---\n"
                  "name: on-k8s\nresources: {infra: k8s}\nrun: sleep 300\n");
    const int id = home.launch(file);
    json group;
    for (int i = 0; i < 240; ++i) { // the launching store publishes the addresses once both run
        group = home.job(id);
        if (group["addresses_published"] == true) {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    REQUIRE(group["addresses_published"] == true);
    std::map<std::string, std::string> remotes; // member -> remote id
    for (const auto& m : group["members"]) {
        remotes[m["member"]] = m["remote_id"];
    }
    REQUIRE(remotes.size() == 2);

    home.wipe_store();
    const json back = listed_with(home.status(), "jobs", remotes["on-slurm"]);
    INFO(back.dump());
    REQUIRE(back.is_object());
    CHECK(back["name"] == name);
    REQUIRE(back["members"].size() == 2);
    for (const auto& m : back["members"]) {
        CHECK(m["remote_id"] == remotes[m["member"].get<std::string>()]);
        CHECK(m["state"] == "RUNNING");
    }
    CHECK(back["state"] == "RUNNING");

    auto cancel = home.tandem({"cancel", std::to_string(back["id"].get<int>())});
    INFO(cancel);
    CHECK(cancel.exit_code == 0);
    CHECK(contains(cancel.out, "with its 2 members"));
    // Both clusters let go of the members.
    const auto k8s_remote = remotes["on-k8s"];
    CHECK(wait_all_gone(k8s_remote.substr(k8s_remote.find('/') + 1)).empty());
    bool slurm_done = false;
    for (int i = 0; i < 60 && !slurm_done; ++i) {
        auto q = slurm_command({"squeue", "-h", "-j", remotes["on-slurm"], "-o", "%T"});
        slurm_done = q.out.find("RUNNING") == std::string::npos && q.out.find("PENDING") == std::string::npos;
        if (!slurm_done) {
            std::this_thread::sleep_for(1s);
        }
    }
    CHECK(slurm_done);
}

TEST_CASE("another user's jobs are shown by --all-users with a USER column and never adopted") {
    const Where where = GENERATE(Where::slurm_rest, Where::slurm_ssh, Where::k8s);
    INFO(where_name(where));
    TeamHome mine(where), theirs(where, true);
    const std::string name = unique_name("theirs");
    const int id = theirs.launch(task_file(theirs, name, infra_of(where)));
    const json launched = theirs.wait_state(id, "RUNNING");
    REQUIRE(launched["state"] == "RUNNING");
    const std::string remote = launched["remote_id"];
    struct Cancel {
        const TeamHome& home;
        int id;
        ~Cancel() { (void)home.tandem({"cancel", std::to_string(id)}); }
    } cancel{theirs, id};
    const std::string other_user = where == Where::k8s ? k8s_setting("K8S_EXEC_USER")
                                                       : slurm_env().at("SLURM_OTHER_USER");

    CHECK(listed_with(mine.status(), "jobs", remote).is_null());
    const json all = mine.status({"--all-users"});
    CHECK(listed_with(all, "jobs", remote).is_null());
    const json shown = listed_with(all, "other_users", remote);
    REQUIRE(shown.is_object());
    CHECK(shown["user"] == other_user);
    CHECK(shown["name"] == name);
    auto table = mine.tandem({"status", "--all-users"});
    INFO(table);
    CHECK(contains(table.out, "USER"));
    CHECK(contains(table.out, other_user));
    // Still not adopted.
    CHECK(listed_with(mine.status(), "jobs", remote).is_null());
}

TEST_CASE("a Slurm job whose comment claims to be yours is shown as its user's, never adopted") {
    TeamHome mine(Where::slurm_rest);
    const auto& s = slurm_env();
    // The second user writes a comment naming the test user, with a token of the test user's form.
    const std::string forged = "tandem-forged12345 tandem:1:t=forged12345;n=forged;u=" + s.at("SLURM_JWT_USER");
    const std::string ssh = "ssh " + s.at("SLURM_SSH_OPTS") + " " + s.at("SLURM_OTHER_USER") + "@" +
                            s.at("SLURM_SSH_HOST");
    auto submitted = run({"/usr/bin/env", "bash", "-c",
                          ssh + " \"sbatch --parsable --comment='" + forged + "' --wrap='sleep 120'\""});
    INFO(submitted);
    REQUIRE(submitted.exit_code == 0);
    std::string remote = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
    struct Cancel {
        std::string id;
        ~Cancel() { (void)slurm_command({"scancel", id}); }
    } cancel{remote};
    CHECK(listed_with(mine.status(), "jobs", remote).is_null());
    const json shown = listed_with(mine.status({"--all-users"}), "other_users", remote);
    REQUIRE(shown.is_object());
    CHECK(shown["user"] == s.at("SLURM_OTHER_USER"));
    CHECK(shown["name"] == "forged");
    CHECK(listed_with(mine.status(), "jobs", remote).is_null());
}
