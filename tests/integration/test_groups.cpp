// Job groups and pipelines across the real Slurm testbed (`lab`: slurmrestd with ssh:, through which the
// address book reaches Slurm jobs) and the real Kubernetes testbed (`k8s`, as the namespace-only
// certificate user), through the real binary: the RL example end to end with its members talking over
// the published addresses, a three-stage pipeline whose middle stage fails, primary/auxiliary
// termination with a delay, cancel of a running group, and groups refused before anything is submitted.

#include <ctime>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"
#include "slurm_testbed.hpp"

using namespace tandem_test;
using nlohmann::json;

namespace {

struct GroupLab {
    TempHome home;
    RunOptions options;

    explicit GroupLab(bool slurm_ssh = true) {
        const auto& s = slurm_env();
        std::string ssh;
        if (slurm_ssh) {
            ssh = "    ssh:\n      host: " + s.at("SLURM_SSH_HOST") + "\n      port: \"" +
                  s.at("SLURM_SSH_PORT") + "\"\n      user: " + s.at("SLURM_SSH_USER") +
                  "\n      identity_file: " + s.at("SLURM_SSH_KEY") +
                  "\n      known_hosts: " + s.at("SLURM_SSH_KNOWN_HOSTS") + "\n";
        }
        home.write_config("clusters:\n"
                          "  - name: lab\n"
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
                          rest_api_pin_line() + ssh + default_partition_line() +
                          "    home: " + s.at("SLURM_USER_HOME") +
                          "\n"
                          "  - name: k8s\n"
                          "    type: kubernetes\n"
                          "    discover_jobs: false\n"
                          "    kubeconfig: " +
                          k8s_setting("K8S_KUBECONFIG_CERT") +
                          "\n"
                          "    namespace: " +
                          k8s_setting("K8S_NAMESPACE") + "\n");
        options.env = home.base_env();
        options.env["SLURM_JWT"] = s.at("SLURM_JWT");
        options.env["SSH_AUTH_SOCK"] = std::nullopt;
    }
    ~GroupLab() {
        RunOptions o = options;
        o.timeout = 60s;
        (void)home.tandem({"cancel", "--all"}, o);
    }
    GroupLab(const GroupLab&) = delete;
    GroupLab& operator=(const GroupLab&) = delete;

    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 180s) const {
        RunOptions o = options;
        o.timeout = timeout;
        return home.tandem(args, o);
    }
    json job(int id) const {
        auto r = tandem({"status", std::to_string(id), "--json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        auto j = json::parse(r.out);
        REQUIRE(j["jobs"].size() == 1);
        return j["jobs"][0];
    }
    json wait_terminal(int id, std::chrono::milliseconds limit = 120s) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        json j = job(id);
        while (!is_terminal_state(j["state"].get<std::string>()) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(500ms);
            j = job(id);
        }
        return j;
    }
};

const json& member(const json& group, const std::string& name) {
    for (const auto& m : group["members"]) {
        if (m["member"] == name) {
            return m;
        }
    }
    FAIL("no member " << name << " in " << group.dump());
    static json none;
    return none;
}

std::string base_of(const json& m) {
    const auto id = m["remote_id"].get<std::string>();
    return id.substr(id.find('/') + 1);
}

// Nothing of the stopped Kubernetes members is left in the namespace; a finished member's address book
// is owned by its Job (and goes with it).
void check_gone_on_k8s(const json& group) {
    for (const auto& m : group["members"]) {
        if (m["backend"] != "k8s" || !m["remote_id"].is_string() || m["remote_id"] == "") {
            continue;
        }
        if (m["state"] != "CANCELLED") {
            const auto books = objects_of("configmaps", base_of(m));
            for (const auto& b : books) {
                CHECK(b["metadata"]["ownerReferences"][0]["kind"] == "Job");
            }
            continue;
        }
        const auto left = wait_all_gone(base_of(m), 60s);
        INFO("member " << m["member"] << " left " << left.size() << " kind(s) behind");
        CHECK(left.empty());
        CHECK(objects_of("configmaps", base_of(m)).empty());
    }
}

int port_base() {
    return 21000 + static_cast<int>(getpid() % 4000) * 2;
}

} // namespace

TEST_CASE("the RL example runs across Slurm and Kubernetes, its members talking by the published addresses") {
    GroupLab lab;
    const int port = port_base();
    auto r = lab.tandem({"launch", examples_dir() + "/rl-pipeline.yaml", "--env",
                         "BUFFER_PORT=" + std::to_string(port), "--env",
                         "REWARD_PORT=" + std::to_string(port + 1)},
                        240s);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "addresses published to its 4 members"));
    CHECK(contains(r.out, "[replay-buffer/0] replay buffer listening on port " + std::to_string(port)));
    CHECK(contains(r.out, "[rollout/0] rollout 0: pushed 20 scored samples"));
    CHECK(contains(r.out, "[rollout/1] rollout 1: pushed 20 scored samples"));
    for (const char* rank : {"0", "1"}) {
        CHECK(contains(r.out,
                       std::string("[trainer/") + rank + "] trainer rank " + rank + " step 2: batch of 8"));
        CHECK(contains(r.out, std::string("[trainer/") + rank + "] trainer rank " + rank + ": done"));
    }
    auto group = lab.job(1);
    CHECK(group["state"] == "SUCCEEDED");
    CHECK(group["cluster"] == "k8s,lab");
    CHECK(member(group, "trainer")["backend"] == "slurm");
    CHECK(member(group, "trainer")["state"] == "SUCCEEDED");
    CHECK(member(group, "trainer")["num_nodes"] == 2);
    // The addresses as published: the trainer's two Slurm nodes, a pod IP per rollout rank.
    CHECK(member(group, "trainer")["hosts"] == json::array({"gpu1", "gpu2"}));
    CHECK(member(group, "rollout")["hosts"].size() == 2);
    auto table = lab.tandem({"status", "1"});
    INFO(table);
    CHECK(contains(table.out, "rank 1"));
    CHECK(contains(table.out, "on gpu2"));
    for (const char* aux : {"replay-buffer", "reward", "rollout"}) {
        CHECK(member(group, aux)["backend"] == "k8s");
        CHECK(member(group, aux)["state"] == "CANCELLED");
        CHECK(member(group, aux)["reason"] == "stopped: the primary tasks ended");
    }
    check_gone_on_k8s(group);
}

TEST_CASE("a pipeline across Slurm and Kubernetes stops at its failing stage with that stage's exit code") {
    GroupLab lab;
    const auto file = lab.home.write(
        "pipe.yaml", "name: pipe\n---\n"
                     "name: fetch\nresources: {infra: slurm}\nrun: echo fetched\n---\n"
                     "name: train\nresources: {infra: k8s}\nrun: |\n  echo training\n  exit 3\n---\n"
                     "name: publish\nresources: {infra: slurm}\nrun: echo published\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    CHECK(r.exit_code == 3);
    CHECK(contains(r.out, "[fetch/0] fetched"));
    CHECK(contains(r.out, "[train/0] training"));
    CHECK_FALSE(contains(r.out, "published"));
    auto group = lab.job(1);
    CHECK(group["state"] == "FAILED");
    CHECK(group["exit_code"] == 3);
    CHECK(member(group, "fetch")["state"] == "SUCCEEDED");
    CHECK(member(group, "train")["state"] == "FAILED");
    CHECK(member(group, "publish")["state"] == "CANCELLED");
    CHECK(member(group, "publish")["remote_id"] == "");
    CHECK(member(group, "publish")["reason"] == "not run: stage 2/3 (train) FAILED");
    auto code = lab.tandem({"status", "1", "--exit-code"});
    CHECK(code.exit_code == 3);
}

TEST_CASE("when the primary ends, the auxiliaries on both backends are stopped after termination_delay") {
    GroupLab lab;
    const auto file =
        lab.home.write("term.yaml", "name: term\nexecution: parallel\nprimary_tasks: [main]\n"
                                    "termination_delay: 4s\n---\n"
                                    "name: main\nresources: {infra: k8s}\nrun: sleep 2\n---\n"
                                    "name: helper-slurm\nresources: {infra: slurm}\nrun: sleep 300\n---\n"
                                    "name: helper-k8s\nresources: {infra: k8s}\nrun: sleep 300\n");
    const auto& s = slurm_env();
    const std::string ssh =
        "ssh " + s.at("SLURM_SSH_OPTS") + " " + s.at("SLURM_SSH_USER") + "@" + s.at("SLURM_SSH_HOST");
    auto books = [&] {
        return run({"/usr/bin/env", "bash", "-c", ssh + " 'ls ~/.tandem/groups 2>/dev/null | wc -l'"}).out;
    };
    const auto books_before = books();
    auto r = lab.tandem({"launch", "--wait", "--json", file});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(books() == books_before); // the Slurm member's address book went with the group
    auto group = json::parse(r.out);
    CHECK(group["state"] == "SUCCEEDED");
    CHECK(member(group, "main")["state"] == "SUCCEEDED");
    for (const char* aux : {"helper-slurm", "helper-k8s"}) {
        const auto& m = member(group, aux);
        CHECK(m["state"] == "CANCELLED");
        CHECK(m["reason"] == "stopped: the primary tasks ended");
    }
    // Stopped no sooner than the delay after the primary ended (ISO times to the second).
    const auto ended = [](const json& m) {
        std::tm tm{};
        const auto text = m["ended_at"].get<std::string>();
        REQUIRE(strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
        return static_cast<long>(timegm(&tm));
    };
    for (const char* aux : {"helper-slurm", "helper-k8s"}) {
        CHECK(ended(member(group, aux)) - ended(member(group, "main")) >= 4);
    }
    auto slurm_job = member(group, "helper-slurm")["remote_id"].get<std::string>();
    auto squeue = run({"/usr/bin/env", "bash", "-c",
                       "ssh " + s.at("SLURM_SSH_OPTS") + " " + s.at("SLURM_SSH_USER") + "@" +
                           s.at("SLURM_SSH_HOST") + " squeue -h -j " + slurm_job + " -o %T"});
    CHECK_FALSE(contains(squeue.out, "RUNNING"));
    check_gone_on_k8s(group);
}

TEST_CASE("cancel of a running group leaves nothing on either backend") {
    GroupLab lab;
    const auto file = lab.home.write(
        "c.yaml", "name: c\nexecution: parallel\n---\n"
                  "name: on-slurm\nnum_nodes: 2\nresources: {infra: slurm}\nrun: sleep 300\n---\n"
                  "name: on-k8s\nresources: {infra: k8s}\nrun: sleep 300\n");
    auto launched = lab.tandem({"launch", "-d", file});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    const int id = std::stoi(launched.out);
    // Running on both, with the addresses published by status.
    json group;
    for (int i = 0; i < 120; ++i) {
        group = lab.job(id);
        if (group["addresses_published"] == true) {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    REQUIRE(group["addresses_published"] == true);
    auto r = lab.tandem({"cancel", std::to_string(id)});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "cancelled, with its 2 members"));
    group = lab.wait_terminal(id);
    CHECK(group["state"] == "CANCELLED");
    for (const auto& m : group["members"]) {
        CHECK(m["state"] == "CANCELLED");
    }
    const auto& s = slurm_env();
    const auto slurm_job = member(group, "on-slurm")["remote_id"].get<std::string>();
    std::string state;
    for (int i = 0; i < 60; ++i) {
        auto q = run({"/usr/bin/env", "bash", "-c",
                      "ssh " + s.at("SLURM_SSH_OPTS") + " " + s.at("SLURM_SSH_USER") + "@" +
                          s.at("SLURM_SSH_HOST") + " squeue -h -j " + slurm_job + " -o %T"});
        state = q.out;
        if (!contains(state, "RUNNING") && !contains(state, "COMPLETING")) {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    CHECK_FALSE(contains(state, "RUNNING"));
    check_gone_on_k8s(group);
}

TEST_CASE("a group with one member nowhere to run submits nothing on any backend") {
    GroupLab lab;
    const auto file =
        lab.home.write("n.yaml", "name: n\nexecution: parallel\n---\n"
                                 "name: fine\nresources: {infra: k8s}\nrun: sleep 60\n---\n"
                                 "name: impossible\nresources: {accelerators: B200:1}\nrun: true\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "no cluster can run impossible; nothing was submitted"));
    auto all = lab.tandem({"status", "--all", "--json"});
    CHECK(json::parse(all.out)["jobs"].empty());
}

TEST_CASE("on a Slurm cluster reached only through slurmrestd the addresses arrive in the job's comment") {
    GroupLab lab(false);
    const auto file = lab.home.write(
        "r.yaml", "name: r\nexecution: parallel\n---\n"
                  "name: pod\nresources: {infra: k8s}\n"
                  "run: echo \"pod sees [$(echo $TANDEM_GROUP_BATCH_HOSTS)]\"\n---\n"
                  "name: batch\nnum_nodes: 2\nresources: {infra: slurm}\n"
                  "run: echo \"rank $TANDEM_NODE_RANK sees pod at $TANDEM_GROUP_POD_HOSTS\"\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.err, "addresses published to its 2 members"));
    // The batch member's two nodes, wherever the planner put them (cpu1 cpu2 when the cpu nodes are free).
    const auto batch_hosts = member(lab.job(1), "batch")["hosts"];
    REQUIRE(batch_hosts.size() == 2);
    CHECK(contains(r.out, "[pod/0] pod sees [" + batch_hosts[0].get<std::string>() + " " +
                              batch_hosts[1].get<std::string>() + "]"));
    CHECK(contains(r.out, "[batch/0] rank 0 sees pod at " + k8s_setting("K8S_POD_NETWORK").substr(0, 9)));
    CHECK(contains(r.out, "[batch/1] rank 1 sees pod at " + k8s_setting("K8S_POD_NETWORK").substr(0, 9)));
    CHECK(lab.job(1)["state"] == "SUCCEEDED");
}

TEST_CASE(
    "a member pending past its timeout moves to its next candidate while the rest of the group runs on") {
    GroupLab lab;
    // Every GPU of both Slurm GPU nodes, so a GPU member waits there (reason Resources).
    auto blocker = lab.tandem(
        {"launch", "-d",
         lab.home.write("blocker.yaml", "name: blocker\nnum_nodes: 2\nresources: {infra: "
                                        "slurm/lab/gpu, accelerators: H100:8}\nrun: sleep 300\n")});
    INFO(blocker);
    REQUIRE(blocker.exit_code == 0);
    const int blocker_id = std::stoi(blocker.out);
    for (int i = 0; i < 120 && lab.job(blocker_id)["state"] != "RUNNING"; ++i) {
        std::this_thread::sleep_for(500ms);
    }
    REQUIRE(lab.job(blocker_id)["state"] == "RUNNING");
    const auto file =
        lab.home.write("move.yaml", "name: move\nexecution: parallel\nprimary_tasks: [mover]\n---\n"
                                    "name: mover\nresources:\n  ordered:\n"
                                    "    - {infra: slurm/lab/gpu, accelerators: H100:1}\n"
                                    "    - {infra: k8s, accelerators: H100:1}\n"
                                    "run: echo \"mover ran beside $TANDEM_GROUP_OTHER_HOSTS\"\n---\n"
                                    "name: other\nresources: {infra: k8s}\nrun: sleep 300\n");
    auto r = lab.tandem({"launch", "--pending-timeout", "5s", file}, 200s);
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.err, "cancelled there; trying k8s/"));
    CHECK(contains(r.out, "[mover/0] mover ran beside "));
    const int group_id = blocker_id + 1;
    auto group = lab.job(group_id);
    CHECK(group["state"] == "SUCCEEDED");
    const auto& mover = member(group, "mover");
    CHECK(mover["cluster"] == "k8s");
    auto history = lab.job(mover["id"].get<int>());
    REQUIRE(history["attempts"].size() == 1);
    CHECK(history["attempts"][0]["cluster"] == "lab");
    CHECK(member(group, "other")["reason"] == "stopped: the primary tasks ended");
    (void)lab.tandem({"cancel", std::to_string(blocker_id)});
}

TEST_CASE("a member that recovers on a new pod gets the group's addresses again, naming its new address") {
    GroupLab lab;
    const auto marker = lab.home.path("worker-failed-once");
    const auto file = lab.home.write(
        "rec.yaml", "name: rec\nexecution: parallel\nprimary_tasks: [worker]\ntermination_delay: 1s\n---\n"
                    "name: server\nresources: {infra: slurm}\nrun: sleep 300\n---\n"
                    "name: worker\nresources:\n  infra: k8s\n  job_recovery: {max_restarts_on_errors: 1}\n"
                    "run: |\n"
                    "  if [ ! -f " + marker + " ]; then touch " + marker +
                    "; echo first-pod=$TANDEM_POD_IP; exit 3; fi\n"
                    "  echo worker-hosts=$TANDEM_GROUP_WORKER_HOSTS me=$TANDEM_POD_IP\n"
                    "  echo server-hosts=$TANDEM_GROUP_SERVER_HOSTS\n");
    auto launched = lab.tandem({"launch", "-d", file});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    const int id = std::stoi(launched.out);
    // Only `status` runs from here: it publishes the addresses, and again once the worker recovered.
    auto group = lab.wait_terminal(id, 180s);
    INFO(group.dump());
    CHECK(group["state"] == "SUCCEEDED");
    const auto& worker = member(group, "worker");
    CHECK(worker["state"] == "SUCCEEDED");
    CHECK(worker["recoveries"] == 1);
    auto logs = lab.tandem({"logs", std::to_string(worker["id"].get<int>())});
    INFO(logs);
    CHECK(contains(logs.err + logs.out, "do not list this node yet (member worker recovered elsewhere)"));
    std::string hosts, me, first;
    for (const auto& line : split_lines(logs.out)) {
        if (line.rfind("worker-hosts=", 0) == 0) {
            const auto sp = line.find(" me=");
            REQUIRE(sp != std::string::npos);
            hosts = line.substr(13, sp - 13);
            me = line.substr(sp + 4);
        } else if (line.rfind("first-pod=", 0) == 0) {
            first = line.substr(10);
        }
    }
    CHECK_FALSE(me.empty());
    CHECK(hosts == me);     // the book the replacement read names it
    CHECK(first != me);     // at a new address
    CHECK_FALSE(contains(logs.out, "server-hosts=\n")); // the other member's addresses are there too
    CHECK(contains(logs.out, "server-hosts="));
}
