// Many tandem processes share one store: `launch` in several terminals, `status` refreshing meanwhile.
// These tests start the processes (and threads) at the same instant on a file that does not exist yet,
// which is when opening races hardest: the WAL switch and schema creation.

#include <cstdio>
#include <set>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include "store/job_store.hpp"
#include "store_test_support.hpp"

using namespace tandem;
using namespace tandem::store;
using tandem::store::testing::sample_job;
using tandem::store::testing::TempDir;

namespace {

std::string job_name(int worker, int n) {
    return "w" + std::to_string(worker) + "-" + std::to_string(n);
}

// Child process body: no Catch2 here, only an exit status for the parent to check.
[[noreturn]] void insert_jobs_and_exit(const std::string& path, int worker, int count, int start_fd) {
    char byte = 0;
    while (read(start_fd, &byte, 1) < 0) { // returns 0 when the parent closes the pipe: everyone starts
    }
    auto store = JobStore::open(path);
    if (!store) {
        std::fprintf(stderr, "worker %d: %s\n", worker, store.error().message.c_str());
        _exit(1);
    }
    for (int n = 0; n < count; ++n) {
        auto id = (*store)->insert(sample_job(job_name(worker, n)));
        if (!id) {
            std::fprintf(stderr, "worker %d: %s\n", worker, id.error().message.c_str());
            _exit(2);
        }
    }
    store->reset();
    _exit(0);
}

void run_processes(const std::string& path, int workers, int per_worker) {
    int start[2];
    REQUIRE(pipe(start) == 0);
    std::fflush(nullptr); // children leave with _exit, but do not duplicate buffered output anyway
    std::vector<pid_t> children;
    for (int worker = 0; worker < workers; ++worker) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            close(start[1]);
            insert_jobs_and_exit(path, worker, per_worker, start[0]);
        }
        children.push_back(pid);
    }
    close(start[0]);
    close(start[1]); // the starting gun
    int failures = 0;
    for (pid_t pid : children) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            ++failures;
        }
    }
    CHECK(failures == 0);
}

void check_all_present(const std::string& path, int workers, int per_worker) {
    auto store = JobStore::open(path);
    REQUIRE(store);
    auto jobs = (*store)->list({});
    REQUIRE(jobs);
    CHECK(jobs->size() == static_cast<std::size_t>(workers * per_worker));
    std::set<std::int64_t> ids;
    std::set<std::string> names;
    for (const auto& job : *jobs) {
        ids.insert(job.id);
        names.insert(job.name);
        const auto expected = sample_job(job.name);
        CHECK(job.state == JobState::pending);
        CHECK(job.cluster == expected.cluster);
        CHECK(job.spec_json == expected.spec_json);
        CHECK(job.placement_json == expected.placement_json);
        CHECK(job.submitted_at == expected.submitted_at);
    }
    CHECK(ids.size() == jobs->size());
    std::set<std::string> expected_names;
    for (int worker = 0; worker < workers; ++worker) {
        for (int n = 0; n < per_worker; ++n) {
            expected_names.insert(job_name(worker, n));
        }
    }
    CHECK(names == expected_names);
}

} // namespace

TEST_CASE("20 processes opening a new store at once all succeed") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    run_processes(path, 20, 1);
    check_all_present(path, 20, 1);
}

TEST_CASE("4 processes inserting 50 jobs each lose none") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    run_processes(path, 4, 50);
    check_all_present(path, 4, 50);
}

TEST_CASE("threads with their own connections share a new store") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    constexpr int workers = 8;
    constexpr int per_worker = 25;
    std::vector<std::string> errors(workers);
    {
        std::vector<std::jthread> threads;
        for (int worker = 0; worker < workers; ++worker) {
            threads.emplace_back([&, worker] {
                auto store = JobStore::open(path);
                if (!store) {
                    errors[worker] = store.error().message;
                    return;
                }
                for (int n = 0; n < per_worker; ++n) {
                    if (auto id = (*store)->insert(sample_job(job_name(worker, n))); !id) {
                        errors[worker] = id.error().message;
                        return;
                    }
                }
            });
        }
    }
    for (const auto& error : errors) {
        CHECK(error.empty());
    }
    check_all_present(path, workers, per_worker);
}
