// Which pending jobs a pending timeout may move.

#include <catch2/catch.hpp>

#include "app/submission.hpp"

using namespace tandem;
using tandem::app::waiting_for_resources;

namespace {

JobRecord pending(const std::string& reason) {
    JobRecord job;
    job.state = JobState::pending;
    job.reason = reason;
    return job;
}

} // namespace

TEST_CASE("a pending timeout moves jobs that wait for resources, not held or scheduled ones") {
    for (const char* reason : {"", "Resources", "Priority", "QOSMaxGRESPerUser", "ReqNodeNotAvail",
                               "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}) {
        INFO(reason);
        CHECK(waiting_for_resources(pending(reason)));
    }
    for (const char* reason :
         {"JobHeldUser", "JobHeldAdmin", "Dependency", "DependencyNeverSatisfied", "BeginTime"}) {
        INFO(reason);
        CHECK_FALSE(waiting_for_resources(pending(reason)));
    }
    JobRecord running = pending("Resources");
    running.state = JobState::running;
    CHECK_FALSE(waiting_for_resources(running));
}
