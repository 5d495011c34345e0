// The Slurm CLI parsers on output recorded from the real testbed (Slurm 22.05.8, tests/fixtures/slurm-cli),
// their refusals of unexpected lines, and the exact command lines.

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "backends/slurm/slurm_cli.hpp"
#include "backends/slurm/slurm_inventory.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {

std::string cli_fixture(const std::string& name) {
    const std::string path = std::string(TANDEM_FIXTURES) + "/slurm-cli/" + name;
    std::ifstream in(path);
    INFO(path);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

const SlurmJob& by_id(const std::vector<SlurmJob>& jobs, const std::string& id) {
    for (const auto& j : jobs) {
        if (j.job_id == id) {
            return j;
        }
    }
    FAIL("no job " << id);
    return jobs.front();
}

const std::string S(1, cli::k_sep);

} // namespace

TEST_CASE("sbatch --parsable: ID or ID and cluster, anything else is an error quoting the line") {
    CHECK(*cli::parse_sbatch_parsable("123\n") == "123");
    CHECK(*cli::parse_sbatch_parsable("123;lab\n") == "123");
    CHECK(*cli::parse_sbatch_parsable("sbatch: warning: something\n77\n") == "77");
    auto bad = cli::parse_sbatch_parsable("Submitted batch job 5\n");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == ErrorKind::remote);
    CHECK(bad.error().message.find("'Submitted batch job 5'") != std::string::npos);
    CHECK_FALSE(cli::parse_sbatch_parsable(""));
    CHECK_FALSE(cli::parse_sbatch_parsable(";lab\n"));
}

TEST_CASE("squeue on 22.05: every state, exit statuses, times, and a name holding the separator") {
    auto jobs = cli::parse_squeue(cli_fixture("squeue-22.05.txt"));
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 6);
    const auto& ok = by_id(*jobs, "9");
    CHECK(ok.state == "COMPLETED");
    CHECK(ok.exit_code == 0);
    CHECK(ok.comment == "tandem-fixture-ok");
    CHECK(ok.name == "fix ok");
    CHECK(ok.start_time == 1796229072);
    CHECK(ok.end_time == 1796229073);
    CHECK(ok.nodes == "cpu1");
    const auto& failed = by_id(*jobs, "10");
    CHECK(failed.state == "FAILED");
    CHECK(failed.exit_code == 3); // wait status 768
    CHECK(failed.signal == 0);
    CHECK(failed.state_reason == "NonZeroExitCode");
    CHECK(failed.name == "fix" + S + "name|with seps"); // the last field keeps the rest of the line
    CHECK(to_job_update(failed).exit_code == 3);
    const auto& killed = by_id(*jobs, "13");
    CHECK(killed.signal == 9);
    CHECK(to_job_update(killed).exit_code == 137);
    const auto& held = by_id(*jobs, "11");
    CHECK(held.state == "PENDING");
    CHECK(held.state_reason == "JobHeldUser");
    CHECK_FALSE(held.start_time);
    CHECK(held.nodes.empty());
    CHECK(held.comment.empty()); // (null)
    CHECK(to_job_update(held).reason == "JobHeldUser");
    const auto& running = by_id(*jobs, "12");
    CHECK(to_job_update(running).state == JobState::running);
    CHECK_FALSE(to_job_update(running).ended_at); // a running job's end time is its limit
    CHECK(to_job_update(by_id(*jobs, "14")).state == JobState::cancelled);
}

TEST_CASE("squeue: a running job without a time limit has the end time NONE") {
    // Printed by 22.05 for a job on a partition without MaxTime (seen on the testbed's `batch`).
    auto jobs = cli::parse_squeue("12" + S + "RUNNING" + S + "None" + S + "0" + S + "1796317683" + S + "NONE" + S +
                                  "cpu[1-2]" + S + "tandem-8beb4c2d7eac730a" + S + "git\n");
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    CHECK((*jobs)[0].start_time == 1796317683);
    CHECK_FALSE((*jobs)[0].end_time);
    CHECK(to_job_update((*jobs)[0]).state == JobState::running);
}

TEST_CASE("squeue on 24.11: the exit code as EXIT:SIGNAL") {
    // Slurm 24.11's squeue prints `3:0` where 22.05 printed the wait status 768.
    auto jobs = cli::parse_squeue("7" + S + "FAILED" + S + "NonZeroExitCode" + S + "3:0" + S + "1796315480" + S +
                                  "1796315489" + S + "c1" + S + "tandem-x" + S + "exit3\n" + "8" + S + "FAILED" + S +
                                  "RaisedSignal:9_Killed" + S + "0:9" + S + "1796315480" + S + "1796315489" + S + "c1" +
                                  S + "(null)" + S + "killed\n");
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 2);
    CHECK((*jobs)[0].exit_code == 3);
    CHECK((*jobs)[0].signal == 0);
    CHECK(to_job_update((*jobs)[0]).exit_code == 3);
    CHECK((*jobs)[1].signal == 9);
    CHECK(to_job_update((*jobs)[1]).exit_code == 137);
    CHECK_FALSE(cli::parse_squeue("7" + S + "FAILED" + S + "x" + S + "3:x" + S + "1" + S + "2" + S + "c1" + S + "c" +
                                  S + "n\n"));
}

TEST_CASE("squeue: unexpected lines are errors quoting the line, never a wrong state") {
    for (const std::string& line :
         {"12" + S + "RUNNING",
          "x1" + S + "RUNNING" + S + "None" + S + "0" + S + "1" + S + "2" + S + "n" + S + "c" + S + "name",
          "1" + S + "running" + S + "None" + S + "0" + S + "1" + S + "2" + S + "n" + S + "c" + S + "name",
          "1" + S + "RUNNING" + S + "None" + S + "x" + S + "1" + S + "2" + S + "n" + S + "c" + S + "name",
          "1" + S + "RUNNING" + S + "None" + S + "0" + S + "2026-12-02T10:00:00" + S + "2" + S + "n" + S +
              "c" + S + "name",
          std::string("slurm_load_jobs error: Socket timed out")}) {
        auto r = cli::parse_squeue(line + "\n");
        INFO(line);
        REQUIRE_FALSE(r);
        CHECK(r.error().kind == ErrorKind::remote);
        CHECK(r.error().message.find("squeue printed an unexpected line") != std::string::npos);
        CHECK(r.error().message.find('\n') == std::string::npos);
    }
    // The separator is shown escaped in the message.
    auto r = cli::parse_squeue("12" + S + "RUNNING\n");
    CHECK(r.error().message.find("'12\\x1fRUNNING'") != std::string::npos);
    CHECK(cli::parse_squeue("")->empty());
}

TEST_CASE("sacct on 22.05: CANCELLED by UID, CODE:SIGNAL, Unknown times, None assigned") {
    auto jobs = cli::parse_sacct(cli_fixture("sacct-22.05.txt"));
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 6);
    CHECK(by_id(*jobs, "10").exit_code == 3);
    CHECK(to_job_update(by_id(*jobs, "10")).state == JobState::failed);
    CHECK(to_job_update(by_id(*jobs, "10")).exit_code == 3);
    CHECK(by_id(*jobs, "13").signal == 9);
    CHECK(by_id(*jobs, "14").state == "CANCELLED");
    CHECK(to_job_update(by_id(*jobs, "14")).state == JobState::cancelled);
    const auto& pending = by_id(*jobs, "11");
    CHECK_FALSE(pending.start_time);
    CHECK(pending.nodes.empty());
    CHECK(pending.state_reason == "JobHeldUser");
    CHECK_FALSE(by_id(*jobs, "12").end_time);
    CHECK(to_job_update(by_id(*jobs, "9")).state == JobState::succeeded);

    for (const std::string& line :
         {"9" + S + "COMPLETED" + S + "0" + S + "1" + S + "2" + S + "n" + S + "r" + S + "c",
          "9" + S + "COMPLETED" + S + "0:0" + S + "yesterday" + S + "2" + S + "n" + S + "r" + S + "c",
          "9.batch" + S + "COMPLETED" + S + "0:0" + S + "1" + S + "2" + S + "n" + S + "r" + S + "c",
          std::string("sacct: error: slurmdbd not responding")}) {
        INFO(line);
        auto r = cli::parse_sacct(line + "\n");
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("sacct printed an unexpected line") != std::string::npos);
    }
}

TEST_CASE("sinfo on 22.05: nodes and partitions feed the inventory") {
    // Recorded from the testbed with a DefaultTime of 1:00:00 on gpu, and `batch` set up the stock way.
    auto view = cli::parse_sinfo(cli_fixture("sinfo-22.05.txt"));
    REQUIRE(view);
    REQUIRE(view->nodes.size() == 4);
    REQUIRE(view->partitions.size() == 3);
    CHECK(view->partitions[0].name == "cpu");
    CHECK(view->partitions[0].is_default);
    CHECK(view->partitions[0].max_time_minutes == 24 * 60);
    CHECK_FALSE(view->partitions[0].default_time_minutes); // n/a
    CHECK(view->partitions[0].nodes == std::vector<std::string>{"cpu1", "cpu2"});
    CHECK(view->partitions[1].max_time_minutes == 2 * 24 * 60);
    CHECK(view->partitions[1].default_time_minutes == 60);
    CHECK(view->partitions[2].name == "batch"); // no MaxTime: UNLIMITED
    CHECK_FALSE(view->partitions[2].max_time_minutes);
    CHECK_FALSE(view->partitions[2].default_time_minutes);
    CHECK(view->nodes[0].partitions == std::vector<std::string>{"cpu", "batch"});
    CHECK(view->nodes[0].state == "mixed");
    CHECK(view->nodes[0].alloc_cpus == 1);
    CHECK(view->nodes[0].gres.empty());
    CHECK(view->nodes[2].gres == "gpu:h100:8");
    CHECK(view->nodes[2].partitions == std::vector<std::string>{"gpu"});
    auto inv = build_inventory("lab", view->partitions, view->nodes);
    REQUIRE(inv.pools.size() == 3);
    CHECK(inv.pools[1].default_time_minutes == 60);
    CHECK(inv.pools[1].accelerator == "h100");
    CHECK(inv.pools[1].gpus_per_node == 8);
    CHECK(inv.pools[1].gpus_free == 16);
    CHECK(inv.pools[0].nodes_free == 1);
    CHECK(inv.pools[0].cpus_per_node == 4);
}

TEST_CASE("sinfo: node states with flags, nodes in two partitions, split partitions, bad lines") {
    const std::string text =
        "a1" + S + "down*" + S + "4" + S + "0/0/4/4" + S + "1000" + S + "(null)" + S + "gpu:0" + S + "p1*\n" +
        "a2" + S + "idle+drain" + S + "4" + S + "0/4/0/4" + S + "1000" + S + "(null)" + S + "gpu:0" + S +
        "p1*\n" + "a2" + S + "idle+drain" + S + "4" + S + "0/4/0/4" + S + "1000" + S + "(null)" + S +
        "gpu:0" + S + "p2\n" + "tandem-partitions\n" + "p1*" + S + "up" + S + "infinite" + S + "a1" + S +
        "n/a\n" + "p1*" + S + "up" + S + "infinite" + S + "a2" + S + "n/a\n" + "p2" + S + "up" + S + "30:00" +
        S + "a2" + S + "10:00\n";
    auto view = cli::parse_sinfo(text);
    REQUIRE(view);
    REQUIRE(view->nodes.size() == 2);
    CHECK(view->nodes[0].state == "down");
    CHECK(view->nodes[1].state == "drain");
    CHECK(view->nodes[1].partitions == std::vector<std::string>{"p1", "p2"});
    REQUIRE(view->partitions.size() == 2);
    CHECK(view->partitions[0].nodes == std::vector<std::string>{"a1", "a2"});
    CHECK_FALSE(view->partitions[0].max_time_minutes);
    CHECK(view->partitions[1].max_time_minutes == 30);
    CHECK(view->partitions[1].default_time_minutes == 10);

    CHECK_FALSE(cli::parse_sinfo("a1" + S + "idle\ntandem-partitions\n"));
    CHECK_FALSE(cli::parse_sinfo("tandem-partitions\np" + S + "up" + S + "1:00" + S + "a1" + S + "later\n"));
    CHECK_FALSE(cli::parse_sinfo("tandem-partitions\np" + S + "up" + S + "soon" + S + "a1" + S + "n/a\n"));
    CHECK_FALSE(cli::parse_sinfo("tandem-partitions\np" + S + "up" + S + "1:00" + S + "a[1-" + S + "n/a\n"));
    CHECK_FALSE(cli::parse_sinfo("tandem-partitions\np" + S + "up" + S + "1:00" + S + "a1\n")); // 4 fields
    auto cut = cli::parse_sinfo(cli_fixture("sinfo-22.05.txt").substr(0, 40));
    REQUIRE_FALSE(cut);
}

TEST_CASE("versions and comment lookups") {
    CHECK(*cli::parse_version(cli_fixture("version-22.05.txt")) == "22.05.8");
    CHECK(*cli::parse_version("slurm 24.05.1\n") == "24.05.1");
    CHECK_FALSE(cli::parse_version("bash: sinfo: command not found\n"));
    const auto comments = cli_fixture("squeue-comments-22.05.txt");
    CHECK(cli::find_comment(comments, "tandem-fixture-fail") == "10");
    CHECK_FALSE(cli::find_comment(comments, "tandem-fixture"));
    CHECK_FALSE(cli::find_comment(comments, "(null)") == std::optional<std::string>("x"));
    // A group member's comment carries the address book after the token.
    CHECK(cli::find_comment("7\x1ftandem-abc;tandem-hosts=aGk=\n", "tandem-abc") == "7");
    CHECK_FALSE(cli::find_comment("7\x1ftandem-abcd;tandem-hosts=aGk=\n", "tandem-abc"));
}

TEST_CASE("command lines: every word single-quoted, fields joined by the unit separator") {
    CHECK(cli::command_line({"echo", "a b", "it's", "$(touch /tmp/x)", "`id`", "a;b", "x\ny"}) ==
          "'echo' 'a b' 'it'\\''s' '$(touch /tmp/x)' '`id`' 'a;b' 'x\ny'");
    CHECK(cli::squeue_command({"12", "13"}) ==
          "'env' 'SLURM_TIME_FORMAT=%s' 'squeue' '--noheader' '--states=all' '--jobs=12,13' "
          "'--Format=JobID:0" +
              S + ",State:0" + S + ",Reason:0" + S + ",exit_code:0" + S + ",StartTime:0" + S + ",EndTime:0" +
              S + ",NodeList:0" + S + ",Comment:0" + S + ",Name:0'");
    CHECK(cli::sacct_command({"7"}) ==
          "'env' 'SLURM_TIME_FORMAT=%s' 'sacct' '--allocations' '--noheader' "
          "'--parsable2' '--delimiter=" +
              S +
              "' '--jobs=7' '--format=JobIDRaw,State,ExitCode,Start,End,NodeList,"
              "Reason,Comment'");
    CHECK(cli::scancel_command("42") == "'scancel' '42'");
    CHECK(cli::squeue_comments_command().find("--only-job-state") == std::string::npos);
    CHECK(cli::squeue_command({"1"}).find("--only-job-state") == std::string::npos);
}
