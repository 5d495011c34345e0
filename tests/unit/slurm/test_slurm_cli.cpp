// The Slurm CLI parsers on output recorded from the real testbeds (Slurm 22.05.8 and 24.11.5,
// tests/fixtures/slurm-cli), their refusals of unexpected lines, and the exact command lines.

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "backends/slurm/rest_api.hpp"
#include "backends/slurm/slurm_cli.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "slurm_fixtures.hpp"

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

TEST_CASE("squeue on 24.11 (recorded): EXIT:SIGNAL exit codes, every state, N/A times") {
    auto jobs = cli::parse_squeue(cli_fixture("squeue-24.11.txt"));
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 8);
    const auto& timeout = by_id(*jobs, "64"); // --time=1, killed at its limit
    CHECK(timeout.state == "TIMEOUT");
    CHECK(timeout.state_reason == "TimeLimit");
    CHECK(timeout.exit_code == 0); // 0:15
    CHECK(timeout.signal == 15);
    CHECK(timeout.name == "fixture-timeout");
    auto u = to_job_update(timeout);
    CHECK(u.state == JobState::failed);
    CHECK(u.reason == "timeout");
    CHECK_FALSE(u.exit_code);
    CHECK(u.started_at == 1796404419);
    CHECK(u.ended_at == 1796404484);
    const auto& cancelled = by_id(*jobs, "66"); // 24.11's squeue prints CANCELLED alone (sacct adds "by UID")
    CHECK(cancelled.state == "CANCELLED");
    CHECK(cancelled.signal == 15);
    CHECK(to_job_update(cancelled).state == JobState::cancelled);
    const auto& done = by_id(*jobs, "70");
    CHECK(done.state == "COMPLETED");
    CHECK(done.exit_code == 0);
    CHECK(to_job_update(done).state == JobState::succeeded);
    const auto& failed = by_id(*jobs, "71");
    CHECK(failed.state == "FAILED");
    CHECK(failed.state_reason == "NonZeroExitCode");
    CHECK(failed.exit_code == 3); // 3:0, where 22.05 printed the wait status 768
    CHECK(failed.signal == 0);
    CHECK(failed.comment == "tandem-fixture-exit3");
    u = to_job_update(failed);
    CHECK(u.state == JobState::failed);
    CHECK(u.exit_code == 3);
    CHECK(u.reason == "exit code 3");
    const auto& held = by_id(*jobs, "68");
    CHECK(held.state == "PENDING");
    CHECK(held.state_reason == "JobHeldUser");
    CHECK_FALSE(held.start_time); // N/A
    CHECK_FALSE(held.end_time);
    CHECK(held.nodes.empty()); // an empty field
    CHECK(to_job_update(held).reason == "JobHeldUser");
    const auto& later = by_id(*jobs, "69"); // deferred by --begin: the times are estimates
    CHECK(later.state_reason == "BeginTime");
    CHECK(later.start_time == 1796411619);
    CHECK_FALSE(to_job_update(later).started_at);
    const auto& running = by_id(*jobs, "65");
    CHECK(running.end_time == 1796408019); // its time limit
    u = to_job_update(running);
    CHECK(u.state == JobState::running);
    CHECK(u.started_at == 1796404419);
    CHECK_FALSE(u.ended_at);
    CHECK(by_id(*jobs, "67").nodes == "gpu1");
}

TEST_CASE("24.11: squeue and slurmrestd, recorded moments apart, give the same updates") {
    auto cli_jobs = cli::parse_squeue(cli_fixture("squeue-24.11.txt"));
    REQUIRE(cli_jobs);
    for (const char* version : {"v0.0.40", "v0.0.41", "v0.0.42"}) {
        INFO(version);
        auto rest_jobs = api::parse_jobs(slurm_fixture(version, "jobs.json"), ApiVersion::v0_0_40);
        REQUIRE(rest_jobs);
        REQUIRE(rest_jobs->size() == cli_jobs->size());
        for (const auto& r : *rest_jobs) {
            INFO("job " << r.job_id);
            const auto& c = by_id(*cli_jobs, r.job_id);
            CHECK(c.name == r.name);
            CHECK(c.state == r.state);
            CHECK(c.state_reason == r.state_reason);
            CHECK(c.start_time == r.start_time);
            CHECK(c.end_time == r.end_time);
            CHECK(c.nodes == r.nodes);
            CHECK(c.comment == r.comment);
            // The raw exit fields differ (squeue prints 0:15 where REST leaves the return code unset),
            // what tandem makes of them does not.
            const auto a = to_job_update(c);
            const auto b = to_job_update(r);
            CHECK(a.state == b.state);
            CHECK(a.reason == b.reason);
            CHECK(a.exit_code == b.exit_code);
            CHECK(a.started_at == b.started_at);
            CHECK(a.ended_at == b.ended_at);
        }
    }
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

TEST_CASE("squeue EXIT:SIGNAL (hand-made lines): a signal, and a code that is not a number") {
    // Slurm 24.11's squeue prints `3:0` where 22.05 printed the wait status 768 (squeue-24.11.txt).
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

TEST_CASE("sinfo on 24.11 (recorded): (null) gres, limits, the default partition") {
    auto view = cli::parse_sinfo(cli_fixture("sinfo-24.11.txt"));
    REQUIRE(view);
    REQUIRE(view->nodes.size() == 4);
    REQUIRE(view->partitions.size() == 3);
    const auto& cpu = view->partitions[0];
    CHECK(cpu.name == "cpu");
    CHECK(cpu.is_default); // "cpu*": what the REST answer cannot say
    CHECK(cpu.state == "UP");
    CHECK(cpu.max_time_minutes == 24 * 60);
    CHECK_FALSE(cpu.default_time_minutes);
    CHECK(cpu.nodes == std::vector<std::string>{"cpu1", "cpu2"});
    CHECK(view->partitions[1].name == "gpu");
    CHECK_FALSE(view->partitions[1].is_default);
    CHECK(view->partitions[1].max_time_minutes == 2 * 24 * 60);
    CHECK(view->partitions[1].nodes == std::vector<std::string>{"gpu1", "gpu2"});
    CHECK(view->partitions[2].name == "batch");
    CHECK_FALSE(view->partitions[2].max_time_minutes); // infinite
    const auto& cpu1 = view->nodes[0];
    CHECK(cpu1.name == "cpu1");
    CHECK(cpu1.state == "allocated");
    CHECK(cpu1.cpus == 4);
    CHECK(cpu1.alloc_cpus == 4);
    CHECK(cpu1.gres.empty());
    CHECK(cpu1.gres_used.empty()); // (null); 22.05 printed gpu:0
    CHECK(cpu1.partitions == std::vector<std::string>{"cpu", "batch"});
    const auto& gpu1 = view->nodes[2];
    CHECK(gpu1.state == "mixed");
    CHECK(gpu1.gres == "gpu:h100:8");
    CHECK(gpu1.gres_used == "gpu:h100:2(IDX:0-1)");
    CHECK(gpu1.real_memory_mb == 8000);

    // The same cluster through slurmrestd, moments apart: the same nodes and limits.
    for (const char* version : {"v0.0.40", "v0.0.41", "v0.0.42"}) {
        INFO(version);
        auto nodes = api::parse_nodes(slurm_fixture(version, "nodes.json"), ApiVersion::v0_0_40);
        auto parts = api::parse_partitions(slurm_fixture(version, "partitions.json"), ApiVersion::v0_0_40);
        REQUIRE(nodes);
        REQUIRE(parts);
        REQUIRE(nodes->size() == view->nodes.size());
        for (std::size_t i = 0; i < nodes->size(); ++i) {
            INFO((*nodes)[i].name);
            CHECK((*nodes)[i].name == view->nodes[i].name);
            CHECK((*nodes)[i].state == view->nodes[i].state);
            CHECK((*nodes)[i].cpus == view->nodes[i].cpus);
            CHECK((*nodes)[i].alloc_cpus == view->nodes[i].alloc_cpus);
            CHECK((*nodes)[i].real_memory_mb == view->nodes[i].real_memory_mb);
            CHECK((*nodes)[i].gres == view->nodes[i].gres);
            CHECK((*nodes)[i].gres_used == view->nodes[i].gres_used);
            CHECK((*nodes)[i].partitions == view->nodes[i].partitions);
        }
        REQUIRE(parts->size() == view->partitions.size());
        for (std::size_t i = 0; i < parts->size(); ++i) {
            CHECK((*parts)[i].name == view->partitions[i].name);
            CHECK((*parts)[i].nodes == view->partitions[i].nodes);
            CHECK((*parts)[i].max_time_minutes == view->partitions[i].max_time_minutes);
            CHECK((*parts)[i].default_time_minutes == view->partitions[i].default_time_minutes);
        }
    }

    auto inv = build_inventory("tandem24", view->partitions, view->nodes);
    REQUIRE(inv.pools.size() == 3);
    CHECK(inv.pools[0].is_default);
    CHECK(inv.pools[0].nodes_free == 1);
    CHECK(inv.pools[1].accelerator == "h100");
    CHECK(inv.pools[1].gpus_per_node == 8);
    CHECK(inv.pools[1].gpus_free == 14);
    CHECK_FALSE(inv.pools[2].max_time_minutes);
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
    CHECK(*cli::parse_version(cli_fixture("version-24.11.txt")) == "24.11.5"); // Debian's "slurm-wlm 24.11.5"
    CHECK(*cli::parse_version(cli_fixture("scontrol-version-24.11.txt")) == "24.11.5");
    CHECK(*cli::parse_version("slurm 24.05.1\n") == "24.05.1");
    CHECK_FALSE(cli::parse_version("bash: sinfo: command not found\n"));
    const auto comments = cli_fixture("squeue-comments-22.05.txt");
    CHECK(cli::find_comment(comments, "tandem-fixture-fail") == "10");
    CHECK_FALSE(cli::find_comment(comments, "tandem-fixture"));
    CHECK_FALSE(cli::find_comment(comments, "(null)") == std::optional<std::string>("x"));
    const auto comments24 = cli_fixture("squeue-comments-24.11.txt"); // --me: another test's job 50 too
    CHECK(cli::find_comment(comments24, "tandem-fixture-exit3") == "71");
    CHECK(cli::find_comment(comments24, "tandem-fixture-held") == "68");
    CHECK_FALSE(cli::find_comment(comments24, "tandem-fixture"));
    // A group member's comment carries the address book after the token.
    CHECK(cli::find_comment("7\x1ftandem-abc;tandem-hosts=aGk=\n", "tandem-abc") == "7");
    CHECK_FALSE(cli::find_comment("7\x1ftandem-abcd;tandem-hosts=aGk=\n", "tandem-abc"));
}

TEST_CASE("command lines: every word single-quoted, fields joined by the unit separator") {
    CHECK(cli::command_line({"echo", "a b", "it's", "$(touch /tmp/x)", "`id`", "a;b", "x\ny"}) ==
          "'echo' 'a b' 'it'\\''s' '$(touch /tmp/x)' '`id`' 'a;b' 'x\ny'");
    CHECK(cli::squeue_command({"12", "13"}) ==
          "'env' 'SLURM_TIME_FORMAT=%s' 'squeue' '--noheader' '--states=all' '--array' '--jobs=12,13' "
          "'--Format=JobArrayID:0" +
              S + ",State:0" + S + ",Reason:0" + S + ",exit_code:0" + S + ",StartTime:0" + S + ",EndTime:0" +
              S + ",NodeList:0" + S + ",Comment:0" + S + ",Name:0'");
    CHECK(cli::sacct_command({"7"}) == "'env' 'SLURM_TIME_FORMAT=%s' 'sacct' '--allocations' '--noheader' "
                                       "'--parsable2' '--delimiter=" +
                                           S +
                                           "' '--jobs=7' '--format=JobID,State,ExitCode,Start,End,NodeList,"
                                           "Reason,Comment'");
    CHECK(cli::scancel_command("42") == "'scancel' '42'");
    CHECK(cli::squeue_comments_command().find("--only-job-state") == std::string::npos);
    CHECK(cli::squeue_command({"1"}).find("--only-job-state") == std::string::npos);
}

TEST_CASE("discovery: the user, the user's jobs and everyone's, one round trip, bad lines counted") {
    const std::string mine_cmd = cli::discover_command(false);
    CHECK(mine_cmd.find("'id' '-un' && ") == 0);
    CHECK(mine_cmd.find("'--me'") != std::string::npos);
    CHECK(mine_cmd.find(std::string(cli::k_discover_marker)) == std::string::npos);
    const std::string all_cmd = cli::discover_command(true);
    CHECK(all_cmd.find(std::string(cli::k_discover_marker)) != std::string::npos);

    const std::string sep = "\x1f";
    auto line = [&](const std::string& id, const std::string& user, const std::string& comment) {
        return id + sep + "RUNNING" + sep + "None" + sep + "0" + sep + "1700000100" + sep + "NONE" + sep +
               "gpu[1-2]" + sep + user + sep + "1700000000" + sep + "2" + sep + comment + "\n";
    };
    const std::string comment = "tandem-abcdef1234 tandem:1:t=abcdef1234;n=train;u=alice";
    // Bob's comment holds a line break and a forged line claiming alice: in the everyone section, the
    // forged line is a job of its own, but never one of the caller's.
    std::string forged = line("52", "alice", comment);
    forged.pop_back();
    const std::string out = "alice\n" + line("41", "alice", comment) + std::string(cli::k_discover_marker) +
                            "\n" + line("41", "alice", comment) + line("50", "bob", "x\n" + forged) +
                            line("51", "alice", "tandem:1:t=abcdef1234") + "not a job line\n";
    auto view = cli::parse_discover(out);
    REQUIRE(view);
    CHECK(view->me == "alice");
    REQUIRE(view->mine.size() == 1);
    CHECK(view->mine[0].job_id == "41");
    CHECK(view->mine[0].user == "alice");
    CHECK(view->mine[0].comment == comment);
    CHECK(view->mine[0].node_count == 2);
    CHECK(view->mine[0].submit_time == 1700000000);
    CHECK(view->mine[0].start_time == 1700000100);
    REQUIRE(view->everyone.size() == 4); // 41, 50, the forged 52 and 51
    CHECK(view->everyone[2].job_id == "52");
    CHECK(view->unreadable == 1);         // the line of no shape

    CHECK_FALSE(cli::parse_discover(""));
}
