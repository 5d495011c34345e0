// SkyPilot tasks as people write them, on the real Slurm testbed over slurmrestd: a plain task on a
// partition set up the stock way (no MaxTime, no DefaultTime), and a git workdir cloned on every node.

#include <catch2/catch.hpp>

#include "git_server.hpp"
#include "slurm_testbed.hpp"

using namespace tandem_test;

TEST_CASE("a plain task on a partition without MaxTime runs without a time limit, as sbatch would") {
    SlurmHome lab;
    auto file = lab.task("stock", "name: stock\nresources:\n  infra: slurm/lab/batch\n"
                                  "run: echo \"limit=$(squeue -h -j $SLURM_JOB_ID -o %l) "
                                  "partition=$SLURM_JOB_PARTITION\"\n");
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    REQUIRE(plan.exit_code == 0);
    CHECK(contains(plan.out, "Chosen: lab/batch"));
    CHECK(contains(plan.out, "Slurm applies none: the partition has no DefaultTime and its MaxTime is UNLIMITED"));
    CHECK_FALSE(contains(plan.out, "\"time_limit\""));
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    // No limit was asked: UNLIMITED, or the 365 days Slurm's backfill scheduler gives an unlimited job it
    // starts (seen on 22.05 when backfill, not the main scheduler, started it).
    CHECK((contains(r.out, "limit=UNLIMITED partition=batch") || contains(r.out, "limit=365-00:00:00 partition=batch")));
    CHECK(lab.job(1)["state"] == "SUCCEEDED");
}

TEST_CASE("without config.slurm.time a job gets the partition's own MaxTime, and with it the asked limit") {
    SlurmHome lab;
    auto file = lab.task("cpu", "name: cpu-limit\nresources:\n  infra: slurm/lab/cpu\n"
                                "run: squeue -h -j $SLURM_JOB_ID -o limit=%l\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "limit=1-00:00:00"));
    auto timed = lab.task("timed", "name: timed\nresources:\n  infra: slurm/lab/batch\n"
                                   "config:\n  slurm:\n    time: '10:00'\n"
                                   "run: squeue -h -j $SLURM_JOB_ID -o limit=%l\n");
    auto t = lab.tandem({"launch", timed});
    INFO(t);
    REQUIRE(t.exit_code == 0);
    CHECK(contains(t.out, "limit=10:00"));
}

TEST_CASE("a git workdir is cloned on every node before setup, at a branch, a tag and a commit") {
    GitServer git;
    SlurmHome lab;
    struct Case {
        std::string ref, version;
    };
    const std::vector<Case> cases{{"", "main"}, {"feature", "feature"}, {"v1", "v1"},
                                  {git.commit_of("v1").substr(0, 12), "v1"}};
    int id = 0;
    for (const auto& c : cases) {
        INFO("ref '" << c.ref << "'");
        auto file = lab.task("git", "name: git-workdir\nnum_nodes: 2\nworkdir:\n  url: " + git.url() +
                                        (c.ref.empty() ? "" : "\n  ref: '" + c.ref + "'") +
                                        "\nconfig:\n  slurm:\n    partition: cpu\n"
                                        "setup: test -f version.txt\n"
                                        "run: echo \"rank=$TANDEM_NODE_RANK version=$(cat version.txt)\"\n");
        auto r = lab.tandem({"launch", file});
        ++id;
        INFO(r);
        REQUIRE(r.exit_code == 0);
        CHECK(contains(r.out, "rank=0 version=" + c.version));
        CHECK(contains(r.out, "rank=1 version=" + c.version));
    }
}

TEST_CASE("a git workdir that cannot be cloned fails the job before setup, with git's message") {
    GitServer git;
    SlurmHome lab;
    auto file = lab.task("git", "name: git-bad\nworkdir:\n  url: " + git.url() +
                                    "\n  ref: no-such-branch\nresources:\n  infra: slurm/lab/cpu\n"
                                    "setup: echo setup-ran\nrun: echo run-ran\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    CHECK(r.exit_code == 128); // git's own exit code is the job's
    CHECK(contains(r.out, "Remote branch no-such-branch not found"));
    CHECK(contains(r.out, "could not be cloned"));
    CHECK_FALSE(contains(r.out, "setup-ran"));
    CHECK_FALSE(contains(r.out, "run-ran"));
    CHECK(lab.job(1)["state"] == "FAILED");
}
