// Fault injection through the real binary against the real testbeds (issue 19): tandem killed with
// SIGKILL at every step of `launch` and `cancel` (TANDEM_FAULT, sys/fault_point.hpp), on the local
// machine, Slurm over slurmrestd, Slurm over SSH and Kubernetes; then `status` must settle every job: no job
// submitted twice, no record lost or left PENDING for ever, no remote job that `status` does not show.
// And 50 launches with status calls among them, at once, across the three systems. The Slurm jobs count
// through accounting (sacct), the Kubernetes ones through kubectl as the testbed's admin.

#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"
#include "slurm_testbed.hpp"

using namespace tandem_test;
using nlohmann::json;

namespace {

// A home with all four: `rest` (Slurm REST), `ssh` (the same Slurm over SSH), `k8s` (as the namespace's
// certificate user) and `local`.
struct FaultHome {
    TempHome home;
    RunOptions options;

    FaultHome() {
        const auto& s = slurm_env();
        home.write_config("clusters:\n"
                          "  - name: rest\n"
                          "    type: slurm\n"
                          "    discover_jobs: false\n"
                          "    rest:\n"
                          "      url: " +
                          s.at("SLURM_REST_URL") +
                          "\n"
                          "      user: " +
                          s.at("SLURM_JWT_USER") +
                          "\n"
                          "      token_env: SLURM_JWT\n" +
                          rest_api_pin_line() + default_partition_line() +
                          "    home: " + s.at("SLURM_USER_HOME") +
                          "\n"
                          "  - name: ssh\n"
                          "    type: slurm\n"
                          "    discover_jobs: false\n"
                          "    ssh:\n"
                          "      host: " +
                          s.at("SLURM_SSH_HOST") +
                          "\n"
                          "      port: \"" +
                          s.at("SLURM_SSH_PORT") +
                          "\"\n"
                          "      user: " +
                          s.at("SLURM_SSH_USER") +
                          "\n"
                          "      identity_file: " +
                          s.at("SLURM_SSH_KEY") +
                          "\n"
                          "      known_hosts: " +
                          s.at("SLURM_SSH_KNOWN_HOSTS") +
                          "\n"
                          "    home: " +
                          s.at("SLURM_USER_HOME") +
                          "\n"
                          "  - name: k8s\n"
                          "    type: kubernetes\n"
                          "    discover_jobs: false\n"
                          "    kubeconfig: " +
                          k8s_setting("K8S_KUBECONFIG_CERT") +
                          "\n"
                          "    namespace: " +
                          k8s_setting("K8S_NAMESPACE") +
                          "\n"
                          "  - name: local\n"
                          "    type: local\n");
        options.env = home.base_env();
        options.env["SLURM_JWT"] = s.at("SLURM_JWT");
    }
    ~FaultHome() {
        RunOptions o = options;
        o.timeout = 120s;
        (void)home.tandem({"cancel", "--all"}, o);
        // Finished Kubernetes Jobs stay (v1.20 has no TTL): delete this home's.
        auto r = home.tandem({"status", "--all", "--json", "--no-refresh"}, o);
        auto j = json::parse(r.out, nullptr, false);
        if (!j.is_object()) {
            return;
        }
        for (const auto& job : j.value("jobs", json::array())) {
            const auto remote = job.value("remote_id", std::string());
            if (job.value("cluster", "") == "k8s" && remote.find('/') != std::string::npos) {
                (void)kubectl({"delete", "jobs,services,secrets", "-l",
                               "tandem.dev/job=" + remote.substr(remote.find('/') + 1), "--wait=false"});
            }
        }
    }
    FaultHome(const FaultHome&) = delete;
    FaultHome& operator=(const FaultHome&) = delete;

    RunResult tandem(const std::vector<std::string>& args, const std::string& fault = "",
                     std::chrono::milliseconds timeout = 120s) const {
        RunOptions o = options;
        o.timeout = timeout;
        if (!fault.empty()) {
            o.env["TANDEM_FAULT"] = fault;
        }
        return home.tandem(args, o);
    }
    Child start(const std::vector<std::string>& args) const {
        RunOptions o = options;
        o.timeout = 300s;
        return home.start_tandem(args, o);
    }
    std::string task(const std::string& name, const std::string& yaml) const {
        return home.write(name + ".yaml", yaml);
    }
    // Every record called `name` (status refreshes, and so settles, first).
    json jobs_named(const std::string& name, bool refresh = true) const {
        std::vector<std::string> args{"status", "--all", "--json"};
        if (!refresh) {
            args.push_back("--no-refresh");
        }
        auto r = tandem(args);
        INFO(r);
        REQUIRE(r.exit_code == 0);
        json out = json::array();
        const json all = json::parse(r.out);
        for (const auto& j : all["jobs"]) {
            if (j.value("name", "") == name) {
                out.push_back(j);
            }
        }
        return out;
    }
    json wait_terminal(const std::string& name, std::chrono::milliseconds limit = 120s) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        json j;
        while (std::chrono::steady_clock::now() < deadline) {
            auto all = jobs_named(name);
            REQUIRE(all.size() == 1);
            j = all[0];
            if (is_terminal_state(j.value("state", ""))) {
                return j;
            }
            std::this_thread::sleep_for(500ms);
        }
        return j;
    }
};

// How many jobs called `name` the cluster behind `cluster` ever took.
int remote_count(const std::string& cluster, const std::string& name) {
    if (cluster == "rest" || cluster == "ssh") {
        // Every job slurmctld took, ended or not (accounting, or squeue and the job completion log).
        return static_cast<int>(slurm_jobs_named(name).size());
    }
    if (cluster == "k8s") {
        auto r = kubectl({"get", "jobs", "-o", "json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        // Base names are "<name, lower-cased>-<id>-<token>" (and "-r<rank>" per rank without Indexed Jobs).
        std::set<std::string> bases;
        const json all = json::parse(r.out);
        for (const auto& j : all["items"]) {
            const auto base = j["metadata"]["labels"].value("tandem.dev/job", "");
            if (base.rfind(name + "-", 0) == 0) {
                bases.insert(base);
            }
        }
        return static_cast<int>(bases.size());
    }
    return -1; // local: the caller counts the runs itself
}

// Slurm's accounting is written a little after the submit: wait until it shows `want` jobs.
int remote_count_settled(const std::string& cluster, const std::string& name, int want) {
    int n = remote_count(cluster, name);
    for (int i = 0; i < 20 && n < want; ++i) {
        std::this_thread::sleep_for(500ms);
        n = remote_count(cluster, name);
    }
    return n;
}

const std::vector<std::string> k_clusters{"local", "rest", "ssh", "k8s"};

std::string infra_of(const std::string& cluster) {
    return cluster == "local" ? "local" : cluster == "k8s" ? "k8s" : "slurm/" + cluster;
}

// Kills `launch -d` at `point` and returns the name of its job.
std::string killed_launch(const FaultHome& h, const std::string& cluster, const std::string& point,
                          const std::string& file) {
    const auto name = unique_name("kill-" + cluster);
    auto r = h.tandem({"launch", "-d", "-n", name, "--infra", infra_of(cluster), file}, point);
    INFO(r);
    REQUIRE(r.signal == SIGKILL);
    CHECK(r.out.empty()); // killed before it could print the id
    return name;
}

} // namespace

TEST_CASE("launch killed after recording, before the submit: status says nothing was submitted") {
    FaultHome h;
    const auto file = h.task("quick", "name: quick\nrun: echo hi\n");
    for (const auto& cluster : k_clusters) {
        INFO(cluster);
        const auto name = killed_launch(h, cluster, "launch.recorded", file);
        // The record is there as the launch left it, PENDING without a remote id...
        auto before = h.jobs_named(name, false);
        REQUIRE(before.size() == 1);
        CHECK(before[0]["state"] == "PENDING");
        CHECK(before[0].value("remote_id", "") == "");
        // ...and the first status settles it for good: FAILED, saying why. Nothing reached the cluster.
        auto after = h.jobs_named(name);
        REQUIRE(after.size() == 1);
        CHECK(after[0]["state"] == "FAILED");
        CHECK(after[0]["reason"] == "launch interrupted before submitting");
        if (cluster != "local") {
            CHECK(remote_count_settled(cluster, name, 0) == 0);
        }
    }
}

TEST_CASE(
    "launch killed after the submit, before the remote id was stored: status finds the job by its token") {
    FaultHome h;
    for (const auto& point : {"launch.submitted", "launch.stored"}) {
        for (const auto& cluster : k_clusters) {
            INFO(point << " on " << cluster);
            const auto marker = h.home.write(std::string("runs-") + point + "-" + cluster, "");
            // The local job counts its runs in a file: a second submit would show as a second line.
            const auto file = h.task(std::string("count-") + cluster,
                                     "name: count\nrun: |\n  echo ran >> " + marker + "\n  echo done\n");
            const auto name = killed_launch(h, cluster, point, file);
            auto j = h.wait_terminal(name);
            CHECK(j["state"] == "SUCCEEDED");
            CHECK(j.value("remote_id", "") != "");
            if (cluster == "local") {
                std::ifstream in(marker);
                std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                CHECK(all == "ran\n");
            } else {
                CHECK(remote_count_settled(cluster, name, 1) == 1); // found, never submitted again
            }
            // logs work on the job found this way.
            auto logs = h.tandem({"logs", std::to_string(j["id"].get<int>())});
            INFO(logs);
            CHECK(logs.exit_code == 0);
            CHECK(logs.out.find("done") != std::string::npos);
        }
    }
}

TEST_CASE("Kubernetes: launch killed between the first Job and the rest: status takes the partial job back") {
    FaultHome h;
    SECTION("two nodes: one of two Jobs created, no Service") {
        const auto file = h.task("two", "name: two\nnum_nodes: 2\nrun: sleep 30\n");
        const auto name = killed_launch(h, "k8s", "k8s.first-job", file);
        CHECK(remote_count("k8s", name) == 1);
        auto after = h.jobs_named(name);
        REQUIRE(after.size() == 1);
        CHECK(after[0]["state"] == "FAILED");
        CHECK(after[0]["reason"] == "launch interrupted before submitting");
        CHECK(remote_count("k8s", name) == 0);
    }
    SECTION("a secret: the Job created, its Secret not") {
        const auto file = h.task("secret", "name: secret\nsecrets:\n  API_KEY: s3cr3t\nrun: sleep 30\n");
        const auto name = killed_launch(h, "k8s", "k8s.first-job", file);
        auto after = h.jobs_named(name);
        REQUIRE(after.size() == 1);
        CHECK(after[0]["state"] == "FAILED");
        CHECK(remote_count("k8s", name) == 0);
    }
}

TEST_CASE("cancel killed after the cluster cancelled the job: status shows it CANCELLED") {
    FaultHome h;
    const auto file = h.task("long", "name: long\nrun: sleep 120\n");
    for (const auto& cluster : k_clusters) {
        INFO(cluster);
        const auto name = unique_name("cancel-" + cluster);
        auto launched = h.tandem({"launch", "-d", "-n", name, "--infra", infra_of(cluster), file});
        INFO(launched);
        REQUIRE(launched.exit_code == 0);
        const auto id = launched.out.substr(0, launched.out.find('\n'));
        auto killed = h.tandem({"cancel", id}, "cancel.remote");
        INFO(killed);
        REQUIRE(killed.signal == SIGKILL);
        auto j = h.wait_terminal(name, 60s);
        CHECK(j["state"] == "CANCELLED");
    }
}

TEST_CASE("cancel of a job whose launch is still submitting: what the launch submits is cancelled too") {
    // The launch stops itself right before its submit (TANDEM_FAULT=launch.recorded:stop); cancel marks
    // the job; the launch, continued, submits, finds the job cancelled and cancels what it submitted.
    FaultHome h;
    const auto file = h.task("long", "name: long\nrun: sleep 120\n");
    for (const auto& cluster : k_clusters) {
        INFO(cluster);
        const auto name = unique_name("race-" + cluster);
        RunOptions o = h.options;
        o.env["TANDEM_FAULT"] = "launch.recorded:stop";
        o.timeout = 120s;
        auto child = h.home.start_tandem({"launch", "-d", "-n", name, "--infra", infra_of(cluster), file}, o);
        bool stopped = false;
        for (int i = 0; i < 300 && !stopped; ++i) {
            std::ifstream stat("/proc/" + std::to_string(child.pid()) + "/stat");
            std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
            const auto paren = text.rfind(')');
            stopped = paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'T';
            std::this_thread::sleep_for(20ms);
        }
        REQUIRE(stopped);
        auto all = h.jobs_named(name); // the launch is alive: status leaves the job to it
        REQUIRE(all.size() == 1);
        CHECK(all[0]["state"] == "PENDING");
        auto cancelled = h.tandem({"cancel", std::to_string(all[0]["id"].get<int>())});
        INFO(cancelled);
        CHECK(cancelled.exit_code == 0);
        ::kill(child.pid(), SIGCONT);
        auto r = child.wait();
        INFO(r);
        CHECK(r.exit_code != 0);
        CHECK(r.err.find("was cancelled while it was being submitted") != std::string::npos);
        auto j = h.wait_terminal(name, 60s);
        CHECK(j["state"] == "CANCELLED");
        CHECK(j.value("remote_id", "") != ""); // what it submitted is on record, and cancelled there
        if (cluster == "k8s") {
            CHECK(wait_all_gone(j["remote_id"].get<std::string>().substr(
                                    j["remote_id"].get<std::string>().find('/') + 1))
                      .empty());
        } else if (cluster != "local") {
            std::string state;
            for (int i = 0; i < 40; ++i) {
                const auto jobs = slurm_jobs_named(name);
                state = jobs.empty() ? std::string() : jobs.front().second;
                if (state.rfind("CANCELLED", 0) == 0) {
                    break;
                }
                std::this_thread::sleep_for(500ms);
            }
            CHECK(state.rfind("CANCELLED", 0) == 0);
        }
    }
}

TEST_CASE("fifty launches and status calls at once across local, Slurm and Kubernetes: each job once") {
    FaultHome h;
    const auto file = h.task("many", "name: many\nrun: echo many-$TANDEM_JOB_ID\n");
    const std::vector<std::string> spread{"local", "rest", "ssh", "k8s", "local"};
    std::vector<Child> launches, statuses;
    std::vector<std::pair<std::string, std::string>> named; // name, cluster
    for (int k = 0; k < 50; ++k) {
        const auto cluster = spread[static_cast<std::size_t>(k) % spread.size()];
        const auto name = unique_name("many-" + cluster);
        named.emplace_back(name, cluster);
        launches.push_back(h.start({"launch", "-d", "-n", name, "--infra", infra_of(cluster), file}));
        if (k % 5 == 0) {
            statuses.push_back(h.start({"status", "--all", "--json"}));
        }
    }
    std::set<int> ids;
    for (auto& c : launches) {
        auto r = c.wait();
        INFO(r);
        CHECK(r.exit_code == 0);
        if (r.exit_code == 0) {
            ids.insert(std::stoi(r.out));
        }
    }
    for (auto& c : statuses) {
        auto r = c.wait();
        INFO(r);
        CHECK(r.exit_code == 0);
        CHECK(json::parse(r.out, nullptr, false).is_object());
    }
    CHECK(ids.size() == 50);
    for (const auto& [name, cluster] : named) {
        INFO(name);
        auto j = h.wait_terminal(name);
        CHECK(j["state"] == "SUCCEEDED");
        if (cluster != "local") {
            CHECK(remote_count_settled(cluster, name, 1) == 1);
        }
    }
}

TEST_CASE("a group launch killed at every step of its fan-out across Slurm and Kubernetes: no orphan, no "
          "ghost, and cancel empties both clusters") {
    FaultHome h;
    // Every step between the group's row and the last member's stored remote id (each member passes the
    // member points and launch.recorded/submitted/stored in turn; #n is the n-th time).
    const std::vector<std::string> points{
        "group.recorded",           "group.member-recorded#1",  "group.member-recorded#2",
        "group.member-submitted#1", "group.member-submitted#2", "launch.recorded#1",
        "launch.submitted#1",       "launch.stored#1",          "launch.submitted#2",
        "launch.stored#2"};
    for (const auto& point : points) {
        INFO(point);
        const auto tag = unique_name("grp");
        const auto on_slurm = tag + "-s";
        const auto on_k8s = tag + "-k";
        const auto file = h.task(tag, "name: " + tag + "\nexecution: parallel\n---\nname: " + on_slurm +
                                          "\nresources: {infra: slurm/rest}\nrun: sleep 300\n---\nname: " +
                                          on_k8s + "\nresources: {infra: k8s}\nrun: sleep 300\n");
        auto r = h.tandem({"launch", "-d", file}, point);
        INFO(r);
        REQUIRE(r.signal == SIGKILL);

        // The first status settles what the launch left; the second sees it settled.
        (void)h.jobs_named(tag);
        auto groups = h.jobs_named(tag);
        REQUIRE(groups.size() == 1);
        const json group = groups[0];
        INFO(group.dump());
        std::map<std::string, json> members;
        for (const auto& m : group.value("members", json::array())) {
            members[m["member"]] = m;
        }
        // No ghost: a member not ended is one a cluster holds (it has a remote id).
        for (const auto& [name, m] : members) {
            if (!is_terminal_state(m["state"])) {
                CHECK(m.value("remote_id", "") != "");
            }
        }
        if (!is_terminal_state(group["state"])) {
            CHECK(members.size() == 2);
        }
        const bool before_any_submit = point.rfind("group.recorded", 0) == 0 ||
                                       point.rfind("group.member-recorded", 0) == 0;
        if (before_any_submit) { // nothing reached a cluster: the group failed, saying why
            CHECK(group["state"] == "FAILED");
            CHECK(contains(group["reason"].get<std::string>(), "launch interrupted"));
        } else if (point.rfind("launch.", 0) == 0) { // both members were on their clusters: found again
            CHECK_FALSE(is_terminal_state(group["state"]));
            CHECK(members.size() == 2);
        }
        // No orphan: whatever a cluster took for a member is what status shows for it.
        const auto slurm_jobs = slurm_jobs_named(on_slurm);
        CHECK(slurm_jobs.size() <= 1);
        if (!slurm_jobs.empty()) {
            REQUIRE(members.count(on_slurm) == 1);
            CHECK(members[on_slurm]["remote_id"] == slurm_jobs[0].first);
        }
        const int k8s_jobs = remote_count("k8s", on_k8s);
        CHECK(k8s_jobs <= 1);
        if (k8s_jobs == 1) {
            REQUIRE(members.count(on_k8s) == 1);
            CHECK(members[on_k8s].value("remote_id", "") != "");
        }

        // Cancel of the group (when it has not ended already) leaves both clusters empty.
        if (!is_terminal_state(group["state"])) {
            auto c = h.tandem({"cancel", std::to_string(group["id"].get<int>())});
            INFO(c);
            CHECK(c.exit_code == 0);
        }
        bool slurm_empty = false;
        for (int i = 0; i < 60 && !slurm_empty; ++i) {
            slurm_empty = true;
            for (const auto& [id, state] : slurm_jobs_named(on_slurm)) {
                slurm_empty = slurm_empty && state != "RUNNING" && state != "PENDING" && state != "CONFIGURING";
            }
            if (!slurm_empty) {
                std::this_thread::sleep_for(1s);
            }
        }
        CHECK(slurm_empty);
        if (members.count(on_k8s) && members[on_k8s].value("remote_id", "") != "") {
            const std::string remote = members[on_k8s]["remote_id"];
            auto left = wait_all_gone(remote.substr(remote.find('/') + 1));
            CHECK(left.empty());
        }
    }
}
