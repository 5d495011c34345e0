// Cancel on the local backend: the job's whole process group goes away (TERM, then KILL after the grace
// period), the record says CANCELLED, and cancelling twice or a missing job behaves as documented.

#include <csignal>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

using namespace tandem_test;

namespace {

int launch_detached(const TempHome& t, const std::string& task, const std::string& name = "") {
    std::vector<std::string> args{"launch", "-d", task};
    if (!name.empty()) {
        args.insert(args.end(), {"-n", name});
    }
    auto r = t.tandem(args);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return std::stoi(r.out);
}

pid_t job_pid(const TempHome& t, int id) {
    auto job = t.job_json(id);
    INFO(job.dump());
    REQUIRE(job["remote_id"].is_string());
    const int pid = std::stoi(job["remote_id"].get<std::string>());
    REQUIRE(pid > 1);
    return pid;
}

// The job's process group, as the kernel has it (not assumed equal to its pid).
pid_t group_of(pid_t pid) {
    const pid_t pgid = getpgid(pid);
    REQUIRE(pgid > 1);
    REQUIRE(pgid != getpgrp());
    return pgid;
}

// Waits (briefly) until the job's leader and everything in its process group are gone.
bool job_ends_within(pid_t pid, pid_t pgid, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (process_gone(pid) && live_group_members(pgid).empty()) {
            return true;
        }
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

void wait_until_running(const TempHome& t, int id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (t.job_json(id)["state"] != "RUNNING" && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(50ms);
    }
}

const char* k_fast_grace = "clusters: [{name: local, type: local, cancel_grace_seconds: \"1\"}]\n";

} // namespace

TEST_CASE("cancel stops the job's processes and records CANCELLED", "[cancel]") {
    TempHome t;
    t.write_config(k_fast_grace);
    const auto task = t.write("sleep.yaml", "name: sleeper\nrun: |\n  sleep 30 &\n  sleep 30\n");
    const int id = launch_detached(t, task);
    REQUIRE(id == 1);
    const pid_t pid = job_pid(t, id);
    const pid_t pgid = group_of(pid);
    wait_until_running(t, id);
    CHECK_FALSE(process_gone(pid));
    // The wrapper, the run script and its two sleeps share the job's group.
    CHECK(live_group_members(pgid).size() >= 3);

    auto r = t.tandem({"cancel", "1"});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "cancelled"));
    CHECK(r.elapsed < 10s);
    // BUG (reported): the local backend signals -PID, but the job's process group is the id of the
    // intermediate child that called setsid(), so kill() fails with ESRCH and the job keeps running.
    CHECK(job_ends_within(pid, pgid, 3s));

    auto job = t.job_json(1);
    CHECK(job["state"] == "CANCELLED");
    CHECK(job["ended_at"].is_string());
    auto ec = t.tandem({"status", "1", "--exit-code"});
    CHECK(ec.exit_code == 103);

    SECTION("cancelling again is a note, not an error") {
        auto again = t.tandem({"cancel", "1"});
        INFO(again);
        CHECK(again.exit_code == 0);
        CHECK(contains(again.err, "already ended"));
        CHECK_FALSE(contains(again.out, "cancelled"));
        CHECK(t.job_json(1)["state"] == "CANCELLED");
    }
    SECTION("a job that does not exist") {
        auto missing = t.tandem({"cancel", "99"});
        INFO(missing);
        CHECK(missing.exit_code == 3);
        CHECK(missing.err.rfind("tandem: error:", 0) == 0);
    }
    SECTION("a job that already finished is left as it ended") {
        const auto quick = t.write("quick.yaml", "name: quick\nrun: 'true'\n");
        REQUIRE(t.tandem({"launch", "--wait", quick}).exit_code == 0);
        auto done = t.tandem({"cancel", "2"});
        INFO(done);
        CHECK(done.exit_code == 0);
        CHECK(contains(done.err, "already ended"));
        CHECK(t.job_json(2)["state"] == "SUCCEEDED");
    }
    SECTION("no job named") {
        auto none = t.tandem({"cancel"});
        INFO(none);
        CHECK(none.exit_code == 2);
    }
}

TEST_CASE("cancel kills a job that ignores TERM after the grace period", "[cancel]") {
    TempHome t;
    t.write_config(k_fast_grace);
    const auto task = t.write("stubborn.yaml", "name: stubborn\nrun: |\n  trap '' TERM\n  sleep 30\n");
    const int id = launch_detached(t, task);
    const pid_t pid = job_pid(t, id);
    const pid_t pgid = group_of(pid);
    wait_until_running(t, id);
    // Give bash time to install the trap before the TERM arrives.
    std::this_thread::sleep_for(300ms);

    auto r = t.tandem({"cancel", std::to_string(id)});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(r.elapsed >= 900ms);             // it waited out the grace period...
    CHECK(r.elapsed < 8s);                 // ...of one second, not the default five
    CHECK(job_ends_within(pid, pgid, 3s)); // BUG (reported): see the first cancel test
    CHECK(t.job_json(id)["state"] == "CANCELLED");
}

TEST_CASE("cancel --all cancels every active job and only those", "[cancel]") {
    TempHome t;
    t.write_config(k_fast_grace);
    const auto quick = t.write("quick.yaml", "name: quick\nrun: 'true'\n");
    REQUIRE(t.tandem({"launch", "--wait", quick}).exit_code == 0);
    const auto task = t.write("sleep.yaml", "name: sleeper\nrun: sleep 30\n");
    const int a = launch_detached(t, task, "sleeper-a");
    const int b = launch_detached(t, task, "sleeper-b");
    const pid_t pa = job_pid(t, a);
    const pid_t pb = job_pid(t, b);
    const pid_t ga = group_of(pa);
    const pid_t gb = group_of(pb);

    auto r = t.tandem({"cancel", "--all"});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "sleeper-a"));
    CHECK(contains(r.out, "sleeper-b"));
    CHECK_FALSE(contains(r.out, "quick"));
    CHECK(job_ends_within(pa, ga, 3s)); // BUG (reported): see the first cancel test
    CHECK(job_ends_within(pb, gb, 3s));

    auto jobs = t.jobs_json();
    REQUIRE(jobs.size() == 3);
    for (const auto& j : jobs) {
        INFO(j.dump());
        CHECK(j["state"] == (j["name"] == "quick" ? "SUCCEEDED" : "CANCELLED"));
    }

    auto again = t.tandem({"cancel", "--all", "--json"});
    INFO(again);
    CHECK(again.exit_code == 0);
    auto j = nlohmann::json::parse(again.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    CHECK(j["cancelled"].empty());
}

TEST_CASE("a job killed behind tandem's back is FAILED with a reason and not RUNNING forever", "[cancel]") {
    TempHome t;
    const auto task = t.write("sleep.yaml", "name: victim\nrun: sleep 30\n");
    const int id = launch_detached(t, task);
    const pid_t pid = job_pid(t, id);
    const pid_t pgid = group_of(pid);
    wait_until_running(t, id);
    // As the OOM killer or a reboot would: everything of the job dies at once, nothing is written.
    REQUIRE(::kill(-pgid, SIGKILL) == 0);
    REQUIRE(job_ends_within(pid, pgid, 3s));

    auto job = t.job_json(id);
    CHECK(job["state"] == "FAILED");
    CHECK(job["exit_code"].is_null());
    CHECK(contains(job["reason"].get<std::string>(), "without recording an exit code"));
    auto ec = t.tandem({"status", std::to_string(id), "--exit-code"});
    CHECK(ec.exit_code == 100);
}
