// seed_jobs DB COUNT: inserts COUNT finished jobs into the job store at DB, through the store's own API.

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "store/job_store.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: seed_jobs DB COUNT\n");
        return 2;
    }
    auto store = tandem::store::JobStore::open(argv[1]);
    if (!store) {
        std::fprintf(stderr, "seed_jobs: %s\n", store.error().message.c_str());
        return 1;
    }
    const long count = std::strtol(argv[2], nullptr, 10);
    const std::int64_t now = std::time(nullptr);
    for (long i = 0; i < count; ++i) {
        tandem::JobRecord job;
        job.name = "job-" + std::to_string(i);
        job.cluster = "local";
        job.backend = "local";
        job.remote_id = std::to_string(100000 + i);
        job.state = i % 5 == 0 ? tandem::JobState::failed : tandem::JobState::succeeded;
        job.reason = i % 5 == 0 ? "exit code 1" : "exit code 0";
        job.exit_code = i % 5 == 0 ? 1 : 0;
        job.submitted_at = now - 3600;
        job.started_at = now - 3500;
        job.ended_at = now - 3000;
        job.updated_at = now - 3000;
        job.spec_json = R"({"name":"job","run":"python train.py --epochs 10","resources":{}})";
        job.placement_json = R"({"cluster":"local","pool":"local"})";
        job.gpus = i % 2 == 0 ? "H100:8" : "";
        if (auto id = (*store)->insert(job); !id) {
            std::fprintf(stderr, "seed_jobs: %s\n", id.error().message.c_str());
            return 1;
        }
    }
    return 0;
}
