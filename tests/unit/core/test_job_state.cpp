#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "core/job.hpp"
#include "core/job_state.hpp"

using namespace tandem;

TEST_CASE("job states round-trip through their names") {
    for (auto s : {JobState::pending, JobState::starting, JobState::running, JobState::succeeded,
                   JobState::failed, JobState::cancelled, JobState::unknown}) {
        auto back = job_state_from_string(to_string(s));
        REQUIRE(back);
        CHECK(*back == s);
    }
    CHECK_FALSE(job_state_from_string("running"));
    CHECK_FALSE(job_state_from_string("DONE"));
}

TEST_CASE("only succeeded, failed and cancelled are terminal") {
    CHECK(is_terminal(JobState::succeeded));
    CHECK(is_terminal(JobState::failed));
    CHECK(is_terminal(JobState::cancelled));
    CHECK_FALSE(is_terminal(JobState::pending));
    CHECK_FALSE(is_terminal(JobState::running));
    CHECK_FALSE(is_terminal(JobState::unknown));
}

TEST_CASE("job outcomes map to documented exit codes") {
    CHECK(exit_code_for(JobState::succeeded, 0, true) == 0);
    CHECK(exit_code_for(JobState::failed, 3, true) == 3);
    CHECK(exit_code_for(JobState::failed, std::nullopt, true) == job_exit::failed_without_code);
    CHECK(exit_code_for(JobState::failed, std::nullopt, false) == job_exit::never_started);
    CHECK(exit_code_for(JobState::cancelled, std::nullopt, true) == job_exit::cancelled);
    CHECK(exit_code_for(JobState::running, std::nullopt, true) == job_exit::not_finished);
    CHECK(exit_code_for(JobState::unknown, std::nullopt, true) == job_exit::unknown);
}
