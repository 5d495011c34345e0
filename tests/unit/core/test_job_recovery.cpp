// The recoveries a cluster records for a job (core/job_recovery.hpp): untrusted text, read bounded.

#include <catch2/catch.hpp>

#include "core/job_recovery.hpp"

using namespace tandem;

TEST_CASE("recoveries read back as written and describe themselves") {
    const auto events = parse_recoveries("x3,n,c33,e");
    REQUIRE(events.size() == 4);
    CHECK(format_recoveries(events) == "x3,n,c33,e");
    CHECK(describe(events[0]) == "exit code 3");
    CHECK(describe(events[1]) == "node failure, requeued");
    CHECK(describe(events[2]) == "exit code 33 (recover_on_exit_codes)");
    CHECK(describe(events[3]) == "evicted");
    CHECK(recoveries_summary("x3") == "1 recovery (exit code 3)");
    CHECK(recoveries_summary("x3,n") == "2 recoveries (exit code 3; node failure, requeued)");
    CHECK(recoveries_summary("").empty());
}

TEST_CASE("recoveries from a cluster skip what they do not know and stay bounded") {
    CHECK(format_recoveries(parse_recoveries("x3,,zz,x999,x-1,x,c12345,n")) == "x3,n");
    std::string many;
    for (int i = 0; i < 10000; ++i) {
        many += "n,";
    }
    CHECK(parse_recoveries(many).size() == k_max_recovery_events);
}

TEST_CASE("recoveries a cluster forgets stay, and new ones are appended once") {
    // A Slurm comment only grows: what it says now is the whole list.
    CHECK(merge_recoveries("x3", "x3,n") == "x3,n");
    CHECK(merge_recoveries("", "x3") == "x3");
    CHECK(merge_recoveries("x3,n", "") == "x3,n");
    // A Kubernetes pod replaced after an eviction is gone once it ended: the stored `e` stays.
    CHECK(merge_recoveries("e", "x3") == "e,x3");
    CHECK(merge_recoveries("e,x3", "x3") == "e,x3");
    CHECK(merge_recoveries("e,x3", "x3,x3") == "e,x3,x3");
    CHECK(merge_recoveries("x3,x3", "x3") == "x3,x3");
    std::string many;
    for (int i = 0; i < 300; ++i) {
        many += "x1,";
    }
    CHECK(parse_recoveries(merge_recoveries(many, many + "n")).size() == k_max_recovery_events);
}

TEST_CASE("recover_on_exit_codes as a cluster keeps them") {
    CHECK(format_exit_codes({3, 7, 255}) == "3,7,255");
    CHECK(parse_exit_codes("3,7,255") == std::vector<int>{3, 7, 255});
    CHECK(parse_exit_codes("0,x,256,-1,4,,5 ") == std::vector<int>{4});
    std::string many;
    for (int i = 0; i < 2000; ++i) {
        many += "9,";
    }
    CHECK(parse_exit_codes(many).size() == 255);
}
