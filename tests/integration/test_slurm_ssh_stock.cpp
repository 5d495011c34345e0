// SkyPilot tasks as people write them, on the real Slurm testbed over SSH (sbatch, squeue and sacct on the
// login node): a plain task on a partition without MaxTime (squeue prints its end time as NONE), extra
// sbatch options, and a git workdir cloned on every node.

#include <catch2/catch.hpp>

#include "git_server.hpp"
#include "test_slurm_ssh_support.hpp"

using namespace tandem_test;

TEST_CASE("over ssh, a plain task on a partition without MaxTime runs and is followed to its end") {
    SshLab lab;
    auto file = lab.task("stock", "name: stock\nresources:\n  infra: slurm/lab/batch\n"
                                  "run: |\n  echo \"limit=$(squeue -h -j $SLURM_JOB_ID -o %l)\"\n  sleep 3\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    // No limit was asked: UNLIMITED, or the 365 days Slurm's backfill scheduler gives an unlimited job it
    // starts (seen on 22.05 when backfill, not the main scheduler, started it).
    CHECK((contains(r.out, "limit=UNLIMITED") || contains(r.out, "limit=365-00:00:00")));
    CHECK_FALSE(contains(r.err, "unexpected line"));
    CHECK(lab.job(1)["state"] == "SUCCEEDED");
}

TEST_CASE("over ssh, config.slurm.sbatch_options reach sbatch, and ones tandem sets are refused before submit") {
    SshLab lab;
    auto file = lab.task("opts", "name: opts\nresources:\n  infra: slurm/lab/batch\n"
                                 "config:\n  slurm:\n    sbatch_options: {nice: 7, exclusive: true, t: '0:20:00'}\n"
                                 "run: scontrol show job $SLURM_JOB_ID | grep -oE '(Nice|TimeLimit)=[^ ]*'\n");
    auto plan = lab.tandem({"plan", file});
    INFO(plan);
    CHECK(contains(plan.out, "#SBATCH --nice=7\n"));
    CHECK(contains(plan.out, "#SBATCH --exclusive\n"));
    CHECK(contains(plan.out, "#SBATCH --time=0-00:20:00\n"));
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "Nice=7"));
    CHECK(contains(r.out, "TimeLimit=00:20:00"));

    auto own = lab.task("own", "name: own\nconfig:\n  slurm:\n    sbatch_options: {job-name: x}\nrun: echo\n");
    auto refused = lab.tandem({"launch", own});
    INFO(refused);
    CHECK(refused.exit_code == 2);
    CHECK(contains(refused.err, "config.slurm.sbatch_options.job-name: --job-name is set by tandem from the "
                                "task; use name"));
    auto all = nlohmann::json::parse(lab.tandem({"status", "--all", "--json"}).out);
    CHECK(all["jobs"].size() == 1); // the refused task recorded nothing
}

TEST_CASE("over ssh, a git workdir is cloned on every node and the job runs in it") {
    GitServer git;
    SshLab lab;
    auto file = lab.task("git", "name: git-ssh\nnum_nodes: 2\nworkdir:\n  url: " + git.url() +
                                    "\n  ref: feature\nconfig:\n  slurm:\n    partition: cpu\n"
                                    "run: echo \"rank=$TANDEM_NODE_RANK version=$(cat version.txt) "
                                    "git=$(git rev-parse HEAD)\"\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    const std::string head = git.commit_of("feature");
    CHECK(contains(r.out, "rank=0 version=feature git=" + head));
    CHECK(contains(r.out, "rank=1 version=feature git=" + head));
}
