// The Slurm backend over slurmrestd against the real testbed (scripts/testbed/slurm): real sbatch jobs,
// real slurmctld states, real accounting.

#include <functional>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "drop_proxy.hpp"
#include "slurm_testbed.hpp"

using namespace tandem_test;

namespace {

int launched_id(const RunResult& r) {
    // `launch --detach` prints the id alone on stdout.
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return std::stoi(r.out);
}

} // namespace

TEST_CASE("a CPU job runs on the cpu partition and its output is readable", "[api]") {
    SlurmHome lab;
    auto file = lab.task("cpu", "name: cpu-job\nenvs:\n  QUOTED: \"it's $HOME \\\"x\\\"\"\n"
                                "run: |\n  echo \"rank=$TANDEM_NODE_RANK nodes=$TANDEM_NUM_NODES\"\n"
                                "  echo \"quoted=$QUOTED\"\n  echo \"partition=$SLURM_JOB_PARTITION\"\n");
    auto r = lab.tandem({"launch", file, "--infra", "slurm"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "rank=0 nodes=1"));
    CHECK(contains(r.out, "quoted=it's $HOME \"x\""));
    // The cpu partition when its nodes are free; tests beside this one may hold them, and then the
    // planner starts the job at once on a gpu node instead (the planner's own tests pin the preference).
    // Either way the job ran in the partition tandem chose and said.
    const auto at = r.err.find("submitted to lab/");
    REQUIRE(at != std::string::npos);
    const auto pool = r.err.substr(at + 17, r.err.find(' ', at + 17) - at - 17);
    CHECK((pool == "cpu" || pool == "gpu"));
    CHECK(contains(r.out, "partition=" + pool + "\n"));
    auto j = lab.job(1);
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["cluster"] == "lab");
    CHECK(j["exit_code"] == 0);
    auto logs = lab.tandem({"logs", "1"});
    CHECK(contains(logs.out, "rank=0 nodes=1"));
}

TEST_CASE("a GPU job lands on the gpu partition with its GPUs visible", "[api]") {
    SlurmHome lab;
    auto file = lab.task("gpu", "name: gpu-job\nresources:\n  accelerators: H100:2\n"
                                "run: echo \"cuda=$CUDA_VISIBLE_DEVICES gpus=$TANDEM_NUM_GPUS_PER_NODE "
                                "partition=$SLURM_JOB_PARTITION\"\n");
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    REQUIRE(plan.exit_code == 0);
    CHECK(contains(plan.out, "Chosen: lab/gpu"));
    CHECK(contains(plan.out, "cpu")); // the cpu partition is listed as rejected: no H100 there
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "cuda=0,1 gpus=2 partition=gpu"));
}

TEST_CASE("a 2-node job runs setup and run on both nodes with ranks", "[api]") {
    SlurmHome lab;
    auto file =
        lab.task("two", "name: two-nodes\nnum_nodes: 2\nconfig:\n  slurm:\n    partition: cpu\n"
                        "setup: echo \"setup on $(hostname)\"\n"
                        "run: echo \"rank=$TANDEM_NODE_RANK of $TANDEM_NUM_NODES node=$SLURMD_NODENAME "
                        "ips=$(echo $TANDEM_NODE_IPS | tr '\\n' ' ')\"\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "rank=0 of 2"));
    CHECK(contains(r.out, "rank=1 of 2"));
    CHECK(contains(r.out, "node=cpu1"));
    CHECK(contains(r.out, "node=cpu2"));
}

TEST_CASE("a job exiting 3 ends FAILED with exit code 3", "[api]") {
    SlurmHome lab;
    auto file = lab.task("three", "name: exit-three\nrun: echo before; exit 3\n");
    auto r = lab.tandem({"launch", "--wait", file});
    INFO(r);
    CHECK(r.exit_code == 3);
    auto j = lab.job(1);
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 3);
    CHECK(lab.tandem({"status", "1", "--exit-code"}).exit_code == 3);
}

TEST_CASE("cancel of a running and of a pending job, both end CANCELLED", "[api]") {
    SlurmHome lab;
    // Two jobs that each want every GPU of both gpu nodes: the second must wait for the first.
    auto file = lab.task("hog", "name: hog\nnum_nodes: 2\nresources:\n  accelerators: H100:8\n"
                                "run: sleep 300\n");
    const int running = launched_id(lab.tandem({"launch", "-d", file}));
    const int pending = launched_id(lab.tandem({"launch", "-d", file}));
    // Whatever fails below, the two jobs do not go on holding every GPU node for the tests after this one
    // (a cancel of jobs that have ended is harmless).
    struct Cleanup {
        std::function<void()> run;
        ~Cleanup() { run(); }
    } cleanup{[&] { lab.tandem({"cancel", std::to_string(running), std::to_string(pending)}); }};
    // Wait until Slurm has started the first and holds the second.
    nlohmann::json first, second;
    for (int i = 0; i < 180; ++i) { // nodes an earlier test's job held may still be completing
        first = lab.job(running);
        second = lab.job(pending);
        if (first["state"] == "RUNNING" && second["state"] == "PENDING") {
            break;
        }
        std::this_thread::sleep_for(500ms);
    }
    REQUIRE(first["state"] == "RUNNING");
    REQUIRE(second["state"] == "PENDING");
    CHECK_FALSE(second["reason"].get<std::string>().empty()); // Slurm's pending reason, e.g. Resources
    auto table = lab.tandem({"status"});
    CHECK(contains(table.out, "PENDING"));
    auto c = lab.tandem({"cancel", std::to_string(running), std::to_string(pending)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    CHECK(lab.wait_terminal(running, 30s)["state"] == "CANCELLED");
    CHECK(lab.wait_terminal(pending, 30s)["state"] == "CANCELLED");
}

TEST_CASE("over plain http, launch, status and cancel never load libcurl") {
    SlurmHome lab;
    lab.options.env["LD_DEBUG"] = "files"; // glibc's loader names every library it maps, on stderr
    // No Kubernetes cluster and no proxy from the runner's environment: those rightly load libcurl.
    lab.options.env["KUBECONFIG"] = lab.home.root() + "/no-kubeconfig";
    for (const char* name : {"KUBERNETES_SERVICE_HOST", "http_proxy", "all_proxy", "ALL_PROXY"}) {
        lab.options.env[name] = std::nullopt;
    }
    auto file = lab.task("sleeper", "name: sleeper\nrun: sleep 60\n");
    auto launched = lab.tandem({"launch", "-d", file, "--infra", "slurm"});
    INFO(launched);
    REQUIRE(launched.exit_code == 0);
    // The loader's trace is there (libc is always mapped): its silence about libcurl means something.
    CHECK(contains(launched.err, "file=libc.so.6"));
    CHECK_FALSE(contains(launched.err, "libcurl"));
    for (const std::vector<std::string>& args : {std::vector<std::string>{"status"}, {"cancel", "1"}}) {
        auto r = lab.tandem(args);
        INFO(r);
        CHECK(r.exit_code == 0);
        CHECK(contains(r.out, "sleeper"));
        CHECK_FALSE(contains(r.err, "libcurl"));
    }
}

TEST_CASE("a wrong token is a one-line unauthorized error naming the cluster", "[api]") {
    SlurmHome lab("eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjEsInN1biI6InNsdXJtdGVzdCJ9.bm90LWEtc2lnbmF0dXJl");
    auto file = lab.task("any", "run: echo hi\n");
    auto r = lab.tandem({"launch", "-d", file, "--infra", "slurm"});
    INFO(r);
    CHECK(r.exit_code == 4);
    auto errors = r.err_lines_starting("tandem: error: ");
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "cluster lab"));
    CHECK(contains(errors[0], "token"));
    CHECK_FALSE(contains(r.err, "bm90LWEtc2lnbmF0dXJl")); // the token never reaches output
    auto check = lab.tandem({"check"});
    CHECK(check.exit_code == 4);
}

TEST_CASE("a job past its time limit ends FAILED with reason timeout") {
    SlurmHome lab;
    auto file = lab.task("slow", "name: slow\nconfig:\n  slurm:\n    time: '1'\nrun: sleep 600\n");
    const int id = launched_id(lab.tandem({"launch", "-d", file}));
    // Slurm enforces limits on its own schedule: a 1-minute limit ends the job within about two minutes.
    auto j = lab.wait_terminal(id, 200s);
    CHECK(j["state"] == "FAILED");
    CHECK(contains(j["reason"].get<std::string>(), "timeout"));
    CHECK(lab.tandem({"status", std::to_string(id), "--exit-code"}).exit_code == 100);
}

TEST_CASE("a job that left slurmctld (MinJobAge) gets its final state from accounting, or says there is none") {
    SlurmHome lab;
    const int min_job_age = std::stoi(slurm_env().at("SLURM_MIN_JOB_AGE"));
    INFO(
        "this test waits for slurmctld to purge two jobs; the testbed runs with MIN_JOB_AGE=" << min_job_age);
    REQUIRE(min_job_age <= 60);
    auto ok = lab.task("ok", "name: quick-ok\nrun: echo fine\n");
    auto bad = lab.task("bad", "name: quick-bad\nrun: exit 5\n");
    auto remote_id = [&](const std::string& file) {
        auto r = lab.tandem({"launch", "-d", "--json", file});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return nlohmann::json::parse(r.out)["remote_id"].get<std::string>();
    };
    const std::vector<std::string> ids{remote_id(ok), remote_id(bad)};
    // tandem is not asked until slurmctld itself has forgotten both jobs (squeue, as root, says so).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4 * min_job_age + 120);
    auto purged = [&] {
        for (const auto& id : ids) {
            auto q = slurm_command({"squeue", "-h", "-t", "all", "-j", id, "-o", "%i"});
            if (q.exit_code == 0 && contains(q.out, id)) {
                return false;
            }
        }
        return true;
    };
    while (!purged() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(2s);
    }
    REQUIRE(purged());
    auto j = lab.job(1);
    auto f = lab.job(2);
    if (slurm_accounting()) {
        CHECK(j["state"] == "SUCCEEDED");
        CHECK(f["state"] == "FAILED");
    } else { // 24.11 here has no slurmdbd: ended, outcome unknown, and said so
        for (const auto& g : {j, f}) {
            INFO(g.dump());
            CHECK(g["state"] == "UNKNOWN");
            CHECK(contains(g["reason"].get<std::string>(), "has ended and left slurmctld"));
            CHECK(contains(g["reason"].get<std::string>(), "keeps no accounting"));
        }
    }
}

TEST_CASE("a submit whose answer is lost is not submitted twice") {
    const auto& env = slurm_env();
    const auto rest = env.at("SLURM_REST_URL");
    const int rest_port = std::stoi(rest.substr(rest.rfind(':') + 1));
    DropProxy proxy(rest_port, "POST /slurm/" + slurm_rest_api() + "/job/submit");
    SlurmHome lab("", "http://127.0.0.1:" + std::to_string(proxy.port()));
    const std::string name = "once-" + std::to_string(::getpid());
    auto file = lab.task("once", "name: " + name + "\nrun: sleep 5\n");
    auto r = lab.tandem({"launch", "-d", file, "--infra", "slurm"});
    INFO(r);
    REQUIRE(proxy.dropped() == 1); // the first answer really was lost
    REQUIRE(r.exit_code == 0);
    const std::string slurm_id = lab.job(1)["remote_id"].get<std::string>();
    // Slurm itself, asked directly: exactly one job of that name.
    auto q = slurm_command({"squeue", "-h", "-t", "all", "-n", name, "-o", "%i"});
    INFO(q);
    REQUIRE(q.exit_code == 0);
    CHECK(split_lines(q.out) == std::vector<std::string>{slurm_id});
    lab.tandem({"cancel", "1"});
}

// Recovery (issue 32): resources.job_recovery through Slurm's own mechanisms. No tandem process runs
// between `launch -d` and the end: the batch script runs the program again in its allocation and records
// each recovery in the job's comment; `status` reads it back.
TEST_CASE("recovery: a job failing once with max_restarts_on_errors 2 succeeds and reports 1 recovery", "[api]") {
    SlurmHome lab;
    const std::string marker = "$HOME/.tandem-test-flaky-" + std::to_string(::getpid()) + "-" +
                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    auto file = lab.task("flaky", "name: flaky\nresources:\n  job_recovery:\n    max_restarts_on_errors: 2\n"
                                  "run: |\n  if [ ! -f " + marker + " ]; then touch " + marker +
                                  "; echo failing-once; exit 3; fi\n  rm -f " + marker + "\n  echo second-time-lucky\n");
    const int id = launched_id(lab.tandem({"launch", "-d", file}));
    auto j = lab.wait_terminal(id);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["exit_code"] == 0);
    CHECK(j["recoveries"] == 1);
    REQUIRE(j["recovered_attempts"].size() == 1);
    CHECK(j["recovered_attempts"][0]["reason"] == "exit code 3");
    CHECK(j["recovered_attempts"][0]["counted"] == true);
    CHECK(lab.tandem({"status", std::to_string(id), "--exit-code"}).exit_code == 0);
    auto table = lab.tandem({"status", std::to_string(id)});
    CHECK(contains(table.out, "exit code 0, after 1 recovery (exit code 3)"));
    // Every attempt's output, each after its marker.
    auto logs = lab.tandem({"logs", std::to_string(id)});
    INFO(logs);
    CHECK(out_of_order(logs.out, {"failing-once", "tandem: attempt 2: exit code 3, restart 1 of 2",
                                  "second-time-lucky"}) == "");
}

TEST_CASE("recovery: a job using up its restarts fails with its last exit code; recover_on_exit_codes are not counted",
          "[api]") {
    SlurmHome lab;
    auto failing = lab.task("always", "name: always-fails\nresources:\n  job_recovery: {max_restarts_on_errors: 1}\n"
                                      "run: echo try; exit 4\n");
    // launch -d, then only status: no tandem process runs while the job recovers.
    auto j = lab.wait_terminal(launched_id(lab.tandem({"launch", "-d", failing})));
    INFO(j.dump());
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 4);
    CHECK(j["recoveries"] == 1);
    CHECK(lab.tandem({"status", "1", "--exit-code"}).exit_code == 4);
    CHECK(contains(lab.tandem({"status", "1"}).out, "exit code 4, after 1 recovery (exit code 4)"));

    // Exit 7 is in recover_on_exit_codes: recovered with no restart allowed, and not counted.
    const std::string marker = "$HOME/.tandem-test-code7-" + std::to_string(::getpid()) + "-" +
                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    auto coded = lab.task("code7", "name: code-seven\nresources:\n  job_recovery:\n    max_restarts_on_errors: 0\n"
                                   "    recover_on_exit_codes: [7]\n"
                                   "run: |\n  if [ ! -f " + marker + " ]; then touch " + marker +
                                   "; exit 7; fi\n  rm -f " + marker + "\n  echo recovered\n");
    auto j7 = lab.wait_terminal(launched_id(lab.tandem({"launch", "-d", coded})));
    INFO(j7.dump());
    CHECK(j7["state"] == "SUCCEEDED");
    CHECK(j7["recoveries"] == 1);
    CHECK(j7["recovered_attempts"][0]["reason"] == "exit code 7 (recover_on_exit_codes)");
    CHECK(j7["recovered_attempts"][0]["counted"] == false);
    // Without job_recovery nothing is retried (and no --requeue is asked).
    auto plain = lab.task("plain", "name: plain-fails\nrun: exit 5\n");
    CHECK(lab.tandem({"launch", "--wait", plain}).exit_code == 5);
    CHECK(lab.job(3)["recoveries"] == 0);
    auto plan = lab.tandem({"plan", coded});
    CHECK(contains(plan.out, "#SBATCH --requeue"));
    CHECK_FALSE(contains(lab.tandem({"plan", plain}).out, "--requeue"));
}
