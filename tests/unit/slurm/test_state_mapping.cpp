#include <catch2/catch.hpp>

#include "backends/slurm/slurm_model.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {
SlurmJob job(std::string state, std::vector<std::string> flags = {}) {
    SlurmJob j;
    j.job_id = "7";
    j.state = std::move(state);
    j.state_flags = std::move(flags);
    j.state_reason = "None";
    j.nodes = "gpu1";
    j.start_time = 1000;
    j.end_time = 2000;
    return j;
}
} // namespace

TEST_CASE("PENDING keeps Slurm's reason, and a pending job's start_time is only an estimate") {
    for (const char* reason :
         {"Resources", "Priority", "QOSMaxGRESPerUser", "JobHeldUser", "ReqNodeNotAvail"}) {
        auto j = job("PENDING");
        j.state_reason = reason;
        const auto u = to_job_update(j);
        CHECK(u.state == JobState::pending);
        CHECK(u.reason == reason);
        CHECK_FALSE(u.started_at);
        CHECK_FALSE(u.ended_at);
        CHECK_FALSE(u.exit_code);
    }
    CHECK(to_job_update(job("PENDING")).reason == "queued");
}

TEST_CASE("a job requeued after a node failure says so while Slurm holds it (restart_cnt)") {
    auto j = job("PENDING");
    j.state_reason = "BeginTime";
    j.restarts = 1;
    CHECK(to_job_update(j).reason == "requeued, restart 1: BeginTime");
    j.state = "RUNNING";
    CHECK(to_job_update(j).reason.find("requeued") == std::string::npos); // running again: no longer
}

TEST_CASE("CONFIGURING is STARTING, as state (v0.0.38) or as flag (v0.0.40)") {
    for (const auto& j :
         {job("CONFIGURING"), job("RUNNING", {"CONFIGURING"}), job("PENDING", {"POWER_UP_NODE"})}) {
        const auto u = to_job_update(j);
        CHECK(u.state == JobState::starting);
        CHECK_FALSE(u.started_at);
    }
}

TEST_CASE("RUNNING, COMPLETING, SUSPENDED, STOPPED and friends are RUNNING, with the start time") {
    struct Case {
        SlurmJob j;
        std::string reason;
    };
    auto completing_with_exit = job("FAILED", {"COMPLETING"});
    completing_with_exit.exit_code = 3;
    for (const auto& c : {Case{job("RUNNING"), ""}, Case{job("COMPLETING"), "completing"},
                          Case{job("RUNNING", {"COMPLETING"}), "completing"},
                          Case{completing_with_exit, "completing"}, Case{job("SUSPENDED"), "suspended"},
                          Case{job("STOPPED"), "stopped"}, Case{job("RUNNING", {"STOPPED"}), "stopped"},
                          Case{job("STAGE_OUT"), "staging out"}, Case{job("SIGNALING"), "signaling"},
                          Case{job("RESIZING"), "resizing"}, Case{job("RUNNING", {"SIGNALING"}), ""}}) {
        INFO(c.j.state);
        const auto u = to_job_update(c.j);
        CHECK(u.state == JobState::running);
        CHECK(u.reason == c.reason);
        CHECK(u.started_at == 1000);
        CHECK_FALSE(u.ended_at); // a running job's end_time is its time limit
        CHECK_FALSE(u.exit_code);
    }
}

TEST_CASE("COMPLETED is SUCCEEDED with exit code 0 and both times") {
    auto j = job("COMPLETED");
    j.exit_code = 0;
    const auto u = to_job_update(j);
    CHECK(u.state == JobState::succeeded);
    CHECK(u.exit_code == 0);
    CHECK(u.reason == "exit code 0");
    CHECK(u.started_at == 1000);
    CHECK(u.ended_at == 2000);
}

TEST_CASE("FAILED carries the script's exit code, or 128 + signal") {
    auto exited = job("FAILED");
    exited.exit_code = 3;
    exited.state_reason = "NonZeroExitCode";
    auto u = to_job_update(exited);
    CHECK(u.state == JobState::failed);
    CHECK(u.exit_code == 3);
    CHECK(u.reason == "exit code 3");
    CHECK(u.ended_at == 2000);

    auto signaled = job("FAILED");
    signaled.signal = 9;
    u = to_job_update(signaled);
    CHECK(u.exit_code == 137);
    CHECK(u.reason == "killed by signal 9 (SIGKILL)");

    auto unknown = job("FAILED"); // e.g. from v0.0.38 accounting, which loses exit codes
    unknown.state_reason = "NonZeroExitCode";
    u = to_job_update(unknown);
    CHECK(u.state == JobState::failed);
    CHECK_FALSE(u.exit_code);
    CHECK(u.reason == "failed (Slurm did not report the exit code)");

    auto launch = job("FAILED");
    launch.state_reason = "JobLaunchFailure";
    CHECK(to_job_update(launch).reason == "failed: JobLaunchFailure");
}

TEST_CASE("failures Slurm caused have a reason and no exit code of the job's") {
    struct Case {
        const char* state;
        const char* reason;
    };
    for (const auto& c : {Case{"TIMEOUT", "timeout"}, Case{"NODE_FAIL", "node failure"},
                          Case{"PREEMPTED", "preempted"}, Case{"BOOT_FAIL", "node boot failure"},
                          Case{"DEADLINE", "deadline reached before the job could end"},
                          Case{"REVOKED", "revoked: the federation runs it on another cluster"}}) {
        INFO(c.state);
        auto j = job(c.state);
        j.signal = 15; // the batch script got Slurm's SIGTERM
        const auto u = to_job_update(j);
        CHECK(u.state == JobState::failed);
        CHECK(u.reason == c.reason);
        CHECK_FALSE(u.exit_code);
        CHECK(u.ended_at == 2000);
    }
}

TEST_CASE("OUT_OF_MEMORY is FAILED 'out of memory', with the exit code when there is one") {
    auto j = job("OUT_OF_MEMORY");
    CHECK(to_job_update(j).reason == "out of memory");
    CHECK_FALSE(to_job_update(j).exit_code);
    j.signal = 9;
    const auto u = to_job_update(j);
    CHECK(u.state == JobState::failed);
    CHECK(u.exit_code == 137);
    CHECK(u.reason == "out of memory (killed by signal 9 (SIGKILL))");
}

TEST_CASE("CANCELLED is CANCELLED, and one that never ran has no start") {
    auto ran = job("CANCELLED");
    ran.signal = 15;
    auto u = to_job_update(ran);
    CHECK(u.state == JobState::cancelled);
    CHECK(u.reason == "cancelled");
    CHECK_FALSE(u.exit_code);
    CHECK(u.started_at == 1000);
    CHECK(u.ended_at == 2000);

    auto pending = job("CANCELLED");
    pending.nodes = "";
    pending.start_time = 2000; // Slurm sets start = end = the cancel time
    u = to_job_update(pending);
    CHECK_FALSE(u.started_at);
    CHECK(u.ended_at == 2000);
}

TEST_CASE("requeue-like flags put the job back to PENDING whatever the base state") {
    struct Case {
        SlurmJob j;
        const char* reason;
    };
    auto requeued = job("PENDING", {"REQUEUED"});
    requeued.state_reason = "BeginTime";
    for (const auto& c :
         {Case{job("REQUEUED"), "requeued"}, Case{requeued, "requeued (BeginTime)"},
          Case{job("NODE_FAIL", {"REQUEUED"}), "requeued"}, Case{job("REQUEUE_HOLD"), "requeued and held"},
          Case{job("REQUEUE_FED"), "requeued by the federation"},
          Case{job("RESV_DEL_HOLD"), "held: its reservation was deleted"},
          Case{job("SPECIAL_EXIT"), "requeued and held after a special exit code"},
          Case{job("PENDING", {"SPECIAL_EXIT"}), "requeued and held after a special exit code"}}) {
        INFO(c.j.state);
        const auto u = to_job_update(c.j);
        CHECK(u.state == JobState::pending);
        CHECK(u.reason == c.reason);
        CHECK_FALSE(u.started_at);
        CHECK_FALSE(u.ended_at);
    }
}

TEST_CASE("flags that only qualify the base state leave it alone") {
    auto j = job("FAILED", {"LAUNCH_FAILED"});
    j.exit_code = 1;
    CHECK(to_job_update(j).state == JobState::failed);
    CHECK(to_job_update(job("COMPLETED", {"UPDATE_DB"})).state == JobState::succeeded);
}

TEST_CASE("an unrecognised state is UNKNOWN (the store keeps the last known state)") {
    const auto u = to_job_update(job("WIBBLE"));
    CHECK(u.state == JobState::unknown);
    CHECK(u.reason.find("WIBBLE") != std::string::npos);
    CHECK(to_job_update(job("")).state == JobState::unknown);
}
