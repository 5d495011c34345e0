#include <catch2/catch.hpp>

#include <set>
#include <string>

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

TEST_CASE("submit tokens are 10 characters of [a-z0-9], fit for a Kubernetes label, and differ") {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto token = tandem::new_submit_token();
        CHECK(token.size() == 10);
        CHECK(token.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos);
        seen.insert(token);
    }
    CHECK(seen.size() == 200);
}
