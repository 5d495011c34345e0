// The local backend against real processes: spawn detached, observe, cancel, logs, tail.

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "backends/file_log.hpp"
#include "backends/local/local_backend.hpp"
#include "backends/registry.hpp"

using namespace tandem;
using namespace std::chrono_literals;

namespace {
JobIdentity token_identity(const std::string& token) {
    JobIdentity id;
    id.token = token;
    return id;
}
} // namespace
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "tandem-local-XXXXXX").string();
        path = mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

TaskSpec task(std::string run, std::string setup = {}) {
    TaskSpec spec;
    spec.name.assign(1, 't'); // not `= "t"`: GCC 12 at -O2 warns (falsely) -Wrestrict on that
    spec.run = std::move(run);
    spec.setup = std::move(setup);
    return spec;
}

JobRecord submitted(local::LocalBackend& backend, const TaskSpec& spec, std::int64_t id) {
    auto remote = backend.submit(spec, Placement{}, id, token_identity("abcde12345"));
    INFO((remote ? std::string() : remote.error().message));
    REQUIRE(remote);
    JobRecord job;
    job.id = id;
    job.remote_id = *remote;
    job.state = JobState::running;
    job.submitted_at = 1;
    return job;
}

JobUpdate wait_terminal(local::LocalBackend& backend, const JobRecord& job) {
    for (int i = 0; i < 200; ++i) {
        auto updates = backend.refresh({job});
        REQUIRE(updates);
        if (is_terminal(updates->front().state)) {
            return updates->front();
        }
        std::this_thread::sleep_for(50ms);
    }
    FAIL("job did not end within 10 s");
    return {};
}

std::string read_all(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("a local job runs detached and records its own exit code") {
    TempDir dir;
    local::LocalBackend backend("local", dir.path.string(), {});
    auto job = submitted(backend, task("echo out; echo err >&2; exit 7"), 1);
    auto end = wait_terminal(backend, job);
    CHECK(end.state == JobState::failed);
    CHECK(end.exit_code == 7);
    CHECK(end.reason == "exit code 7");
    const auto log = read_all(dir.path / "jobs/1/output.log");
    CHECK(log.find("out\n") != std::string::npos);
    CHECK(log.find("err\n") != std::string::npos);
    CHECK(read_all(dir.path / "jobs/1/exit_code") == "7\n");
}

TEST_CASE("setup failing skips run") {
    TempDir dir;
    local::LocalBackend backend("local", dir.path.string(), {});
    auto job = submitted(backend, task("echo ran", "echo setting-up; exit 4"), 1);
    auto end = wait_terminal(backend, job);
    CHECK(end.exit_code == 4);
    const auto log = read_all(dir.path / "jobs/1/output.log");
    CHECK(log.find("setting-up") != std::string::npos);
    CHECK(log.find("ran") == std::string::npos);
}

TEST_CASE("cancel stops the whole process group, even a child ignoring TERM") {
    TempDir dir;
    local::LocalSettings settings;
    settings.cancel_grace = 300ms;
    local::LocalBackend backend("local", dir.path.string(), settings);
    // The job starts a grandchild that ignores TERM; only KILL stops it.
    auto spec = task("bash -c \"trap '' TERM; sleep 60\" & echo $! > child.pid; wait");
    spec.workdir = dir.path.string();
    auto job = submitted(backend, spec, 1);
    std::this_thread::sleep_for(300ms);
    auto running = backend.refresh({job});
    REQUIRE(running);
    CHECK(running->front().state == JobState::running);
    int pgid = 0;
    std::ifstream(dir.path / "jobs/1/pid") >> pgid;
    REQUIRE(pgid > 0);
    CHECK(::getpgid(pgid) == pgid); // the job leads its own process group
    int child = 0;
    std::ifstream(dir.path / "child.pid") >> child;
    REQUIRE(child > 0);
    auto child_ticks = local::start_ticks_of(child);
    REQUIRE(child_ticks);
    REQUIRE(local::is_alive({child, *child_ticks}));

    REQUIRE(backend.cancel(job));
    auto after = backend.refresh({job});
    REQUIRE(after);
    CHECK(after->front().state == JobState::cancelled);
    CHECK_FALSE(local::group_alive(pgid));
    CHECK_FALSE(local::is_alive({child, *child_ticks}));
}

TEST_CASE("a job whose process vanished without an exit code is FAILED with a reason") {
    TempDir dir;
    local::LocalBackend backend("local", dir.path.string(), {});
    auto job = submitted(backend, task("sleep 60"), 1);
    std::ifstream pid_file(dir.path / "jobs/1/pid");
    int pgid = 0;
    pid_file >> pgid;
    REQUIRE(pgid > 0);
    REQUIRE(::kill(-pgid, SIGKILL) == 0);
    auto end = wait_terminal(backend, job);
    CHECK(end.state == JobState::failed);
    CHECK_FALSE(end.exit_code);
    CHECK(end.reason.find("without recording an exit code") != std::string::npos);
}

TEST_CASE("a reused pid is not mistaken for the job") {
    local::ProcessId self{static_cast<int>(::getpid()), 0};
    auto ticks = local::start_ticks_of(self.pid);
    REQUIRE(ticks);
    self.start_ticks = *ticks;
    CHECK(local::is_alive(self));
    self.start_ticks += 1;
    CHECK_FALSE(local::is_alive(self));
}

TEST_CASE("logs: whole file, tail, and follow until the job ends") {
    TempDir dir;
    local::LocalBackend backend("local", dir.path.string(), {});
    auto job = submitted(backend, task("for i in 1 2 3 4 5; do echo line$i; sleep 0.1; done"), 1);
    std::string followed;
    REQUIRE(backend.logs(job, LogOptions{true, std::nullopt, std::nullopt}, [&](std::string_view chunk) {
        followed += chunk;
        return true;
    }));
    CHECK(followed == "line1\nline2\nline3\nline4\nline5\n");
    std::string tail;
    REQUIRE(backend.logs(job, LogOptions{false, 2, std::nullopt}, [&](std::string_view chunk) {
        tail += chunk;
        return true;
    }));
    CHECK(tail == "line4\nline5\n");
}

TEST_CASE("tail_offset finds the start of the last N lines") {
    TempDir dir;
    const auto file = (dir.path / "f.log").string();
    std::ofstream(file) << "a\nbb\nccc\n";
    CHECK(backends::tail_offset(file, 1) == 5);
    CHECK(backends::tail_offset(file, 2) == 2);
    CHECK(backends::tail_offset(file, 3) == 0);
    CHECK(backends::tail_offset(file, 10) == 0);
    CHECK(backends::tail_offset(file, 0) == 9);
    std::ofstream(file) << "no newline at end";
    CHECK(backends::tail_offset(file, 1) == 0);
}

TEST_CASE("the backend table makes local backends and refuses unknown settings") {
    ClusterConfig ok{"box", BackendKind::local, {{"accelerators", "H100:8"}}, {}};
    auto made = backends::make_backend(ok, {"/tmp", {}});
    REQUIRE(made);
    auto inv = (*made)->inventory();
    REQUIRE(inv);
    REQUIRE(inv->pools.size() == 1);
    CHECK(inv->pools[0].accelerator == "H100");
    CHECK(inv->pools[0].gpus_per_node == 8);
    CHECK(inv->pools[0].cpus_per_node > 0);

    ClusterConfig bad{"box", BackendKind::local, {{"gpus", "8"}}, {}};
    auto refused = backends::make_backend(bad, {"/tmp", {}});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::config);
    CHECK(refused.error().message.find("clusters.box.gpus: unknown setting") != std::string::npos);

    ClusterConfig slurm{"hpc", BackendKind::slurm, nlohmann::json::object(), {}};
    auto no_rest = backends::make_backend(slurm, {"/tmp", {}});
    REQUIRE_FALSE(no_rest);
    CHECK(no_rest.error().kind == ErrorKind::config);
    CHECK(no_rest.error().message.find(
              "clusters.hpc.rest: a slurm cluster needs rest: (slurmrestd), ssh: (a login node), or both") !=
          std::string::npos);
}

TEST_CASE("following a file that is replaced starts again from its beginning") {
    TempDir dir;
    const auto file = (dir.path / "out.log").string();
    std::ofstream(file) << "old output from another job\n";
    std::string seen;
    int polls = 0;
    auto ended = [&] {
        if (++polls == 2) {
            std::ofstream(file, std::ios::trunc) << "new\n"; // the job starts and truncates it
        }
        return polls >= 4;
    };
    REQUIRE(backends::stream_file(
        file, LogOptions{true, std::nullopt, std::nullopt},
        [&](std::string_view chunk) {
            seen += chunk;
            return true;
        },
        ended, std::chrono::milliseconds(1)));
    CHECK(seen == "old output from another job\nnew\n");
}
