// The system seams below the adapters (src/sys): tokens.

#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "sys/clock.hpp"

TEST_CASE("submit tokens are 10 lower-case letters and digits, fit for a Kubernetes label, and differ") {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto token = tandem::sys::new_submit_token();
        CHECK(token.size() == 10);
        CHECK(token.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos);
        seen.insert(token);
    }
    CHECK(seen.size() == 200);
}

TEST_CASE("random hex has the digits asked for") {
    const auto hex = tandem::sys::random_hex(16);
    CHECK(hex.size() == 16);
    CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
}
