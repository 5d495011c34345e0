// Sweeps (issue 33) on Kubernetes: one Indexed Job whose completion indexes are the elements (1.22+),
// `parallelism` the sweep's limit; every element's output reaches `logs`, a failing element fails the
// sweep and is named, cancel leaves nothing. On 1.20 (no Indexed Jobs) a sweep is refused with the reason.

#include <algorithm>
#include <thread>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"

using namespace tandem_test;

namespace {

// On a server without Indexed Jobs: launching `file` is refused before anything is made.
bool refused_without_indexed_jobs(const K8sHome& lab, const std::string& file,
                                  const std::vector<std::string>& extra = {}) {
    if (k8s_minor() >= 22) {
        return false;
    }
    std::vector<std::string> args{"launch", "-d", file};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = lab.tandem(args);
    INFO(r);
    CHECK(r.exit_code != 0);
    CHECK(contains(
        r.err, "sweep: a sweep is one Indexed Job, which Kubernetes has from 1.22; this cluster runs 1.20"));
    CHECK(contains(r.err, "hint: run the sweep on Slurm"));
    return true;
}

} // namespace

TEST_CASE("sweep: a 3x2 grid is one Indexed Job with parallelism 2, every element's output in logs") {
    K8sHome lab;
    auto file = lab.task("grid", "name: " + unique_name("k8s-sweep") +
                                     "\nresources:\n  infra: k8s\n"
                                     "sweep:\n  lr: [\"0.1\", \"0.01\", \"it's 3\"]\n  bs: [16, 32]\n"
                                     "sweep_parallel: 2\n"
                                     "run: |\n  echo \"start $(date +%s%N)\"\n"
                                     "  echo \"lr=$lr bs=$bs index=$TANDEM_SWEEP_INDEX of $TANDEM_SWEEP_SIZE "
                                     "rank=$SKYPILOT_JOB_RANK/$SKYPILOT_NUM_JOBS\"\n"
                                     "  sleep 2\n  echo \"end $(date +%s%N)\"\n");
    if (refused_without_indexed_jobs(lab, file)) {
        return;
    }
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    CHECK(contains(plan.out, "Sweep: 6 elements (values of lr, bs), at most 2 at once"));
    CHECK(contains(plan.out, "completionMode: \"Indexed\""));
    auto r = lab.tandem({"launch", "--wait", file}, 180s);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto j = lab.job(1);
    INFO(j.dump());
    CHECK(j["state"] == "SUCCEEDED");
    CHECK(j["reason"] == "6 elements: 6 SUCCEEDED");
    REQUIRE(j["elements"].size() == 6);
    CHECK(j["elements"][5]["values"]["lr"] == "it's 3");
    CHECK(j["elements"][5]["state"] == "SUCCEEDED");

    // One Job as the cluster holds it (kubectl): six completions, two at a time, one pod per index.
    const auto base = lab.base_of(1);
    auto jobs = objects_of("jobs", base);
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0]["spec"]["completionMode"] == "Indexed");
    CHECK(jobs[0]["spec"]["completions"] == 6);
    CHECK(jobs[0]["spec"]["parallelism"] == 2);
    CHECK(jobs[0]["status"]["succeeded"] == 6);
    std::vector<std::string> indexes;
    for (const auto& pod : objects_of("pods", base)) {
        indexes.push_back(pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]);
    }
    std::sort(indexes.begin(), indexes.end());
    CHECK(indexes == std::vector<std::string>{"0", "1", "2", "3", "4", "5"});

    // Every element's output, labelled; never more than two elements running at once.
    auto logs = lab.tandem({"logs", "1"});
    INFO(logs);
    REQUIRE(logs.exit_code == 0);
    CHECK(contains(logs.out, "[lr=0.1 bs=16] lr=0.1 bs=16 index=0 of 6 rank=0/6\n"));
    CHECK(contains(logs.out, "[lr=it's 3 bs=32] lr=it's 3 bs=32 index=5 of 6 rank=5/6\n"));
    const auto at_once = most_at_once(logs.out);
    CHECK(at_once.edges == 12);
    CHECK(at_once.most == 2);
    auto one = lab.tandem({"logs", "1", "--element", "3"});
    INFO(one);
    CHECK(contains(one.out, "lr=0.01 bs=32 index=3 of 6 rank=3/6\n"));
    CHECK_FALSE(contains(one.out, "[lr="));
    CHECK_FALSE(contains(one.out, "index=2"));
    auto status = lab.tandem({"status", "1"});
    CHECK(contains(status.out, "#4 lr=it's 3 bs=16"));
}

TEST_CASE("sweep: a failing element fails the sweep, named with its exit code, and the Job stops the rest") {
    K8sHome lab;
    auto file = lab.task("fail", "name: " + unique_name("k8s-sweep-fail") +
                                     "\nresources:\n  infra: k8s\nsweep:\n  k: [a, b, c]\n"
                                     "run: |\n  case $k in\n    a) echo \"ok a\" ;;\n"
                                     "    b) sleep 4; echo bad; exit 7 ;;\n    c) sleep 120 ;;\n  esac\n");
    if (refused_without_indexed_jobs(lab, file)) {
        return;
    }
    auto r = lab.tandem({"launch", "--wait", file}, 180s);
    INFO(r);
    CHECK(r.exit_code == 7);
    CHECK(contains(r.err, "failed: #1 k=b: exit code 7"));
    auto j = lab.wait_terminal(1, 60s);
    INFO(j.dump());
    CHECK(j["state"] == "FAILED");
    CHECK(j["exit_code"] == 7);
    CHECK(j["elements"][0]["state"] == "SUCCEEDED");
    CHECK(j["elements"][1]["state"] == "FAILED");
    CHECK(j["elements"][1]["exit_code"] == 7);
    // Before backoffLimitPerIndex (1.29) the Job's one backoffLimit is spent by element b: the Job
    // controller fails the Job and stops c.
    CHECK(j["elements"][2]["state"] == (k8s_minor() >= 29 ? "FAILED" : "CANCELLED"));
    auto logs = lab.tandem({"logs", "1"});
    CHECK(contains(logs.out, "[k=a] ok a\n"));
    CHECK(contains(logs.out, "[k=b] bad\n"));
}

TEST_CASE("sweep: cancel of a running sweep cancels every element and leaves nothing in the namespace") {
    K8sHome lab;
    auto file = lab.task("long", "name: " + unique_name("k8s-sweep-cancel") +
                                     "\nresources:\n  infra: k8s\nsweep_parallel: 2\nrun: sleep 300\n");
    if (refused_without_indexed_jobs(lab, file, {"--num-jobs", "4"})) {
        return;
    }
    const int id = lab.launch_detached(file, {"--num-jobs", "4"});
    auto j = lab.wait_state(id, "RUNNING", 90s);
    INFO(j.dump());
    REQUIRE(j["state"] == "RUNNING");
    for (int i = 0; i < 40 && !contains(j["reason"].get<std::string>(), "2 RUNNING, 2 PENDING"); ++i) {
        std::this_thread::sleep_for(500ms);
        j = lab.job(id);
    }
    CHECK(contains(j["reason"].get<std::string>(), "2 RUNNING, 2 PENDING"));
    const auto base = lab.base_of(id);
    // One element alone: Kubernetes has no way, and says so; nothing is touched.
    auto one = lab.tandem({"cancel", std::to_string(id), "--element", "0"});
    INFO(one);
    CHECK(one.exit_code != 0);
    CHECK(contains(one.err, "a Kubernetes Indexed Job cannot stop one of its indexes"));
    CHECK(contains(one.err, "hint: tandem cancel " + std::to_string(id) + " cancels the whole sweep"));
    CHECK(lab.job(id)["elements"][0]["state"] == "RUNNING");
    auto c = lab.tandem({"cancel", std::to_string(id)});
    INFO(c);
    REQUIRE(c.exit_code == 0);
    auto done = lab.wait_terminal(id, 60s);
    CHECK(done["state"] == "CANCELLED");
    for (const auto& e : done["elements"]) {
        CHECK(e["state"] == "CANCELLED");
    }
    CHECK(wait_all_gone(base).empty());
}

TEST_CASE("sweep: a local workdir is refused with the reason") {
    K8sHome lab;
    lab.home.write("project/train.py", "print('hi')\n");
    auto file = lab.task("wd", "name: " + unique_name("k8s-sweep-wd") +
                                   "\nresources:\n  infra: k8s\nworkdir: " + lab.home.path("project") +
                                   "\nsweep:\n  k: [a, b]\nrun: cat train.py\n");
    auto r = lab.tandem({"launch", "-d", file});
    INFO(r);
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, k8s_minor() >= 22 ? "would wait for a workdir and file_mounts no one sends"
                                            : "a sweep is one Indexed Job, which Kubernetes has from 1.22"));
}
