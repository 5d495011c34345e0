#include <catch2/catch.hpp>

#include "backends/slurm/hostlist.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {
std::vector<std::string> expand(std::string_view list) {
    auto hosts = expand_hostlist(list);
    REQUIRE(hosts);
    return *hosts;
}
} // namespace

TEST_CASE("hostlists expand in Slurm's order, keeping zero padding") {
    using V = std::vector<std::string>;
    CHECK(expand("") == V{});
    CHECK(expand("gpu1") == V{"gpu1"});
    CHECK(expand("gpu[1-2]") == V{"gpu1", "gpu2"});
    CHECK(expand("cpu[01-03,7],gpu1") == V{"cpu01", "cpu02", "cpu03", "cpu7", "gpu1"});
    CHECK(expand("n[8-11]") == V{"n8", "n9", "n10", "n11"});
    CHECK(expand("n[098-101]") == V{"n098", "n099", "n100", "n101"});
    CHECK(expand("a,b[3],c") == V{"a", "b3", "c"});
    CHECK(expand("rack[1-2]-n[1-2]") == V{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"});
    CHECK(expand("gpu[1-2]-ib") == V{"gpu1-ib", "gpu2-ib"});
}

TEST_CASE("malformed hostlists are errors, not guesses") {
    for (const char* bad :
         {"gpu[1-2", "gpu1-2]", "gpu[2-1]", "gpu[a-b]", "gpu[]", "gpu[1,]", "gpu[[1]]", "[1-2]"}) {
        INFO(bad);
        auto hosts = expand_hostlist(bad);
        REQUIRE_FALSE(hosts);
        CHECK(hosts.error().kind == ErrorKind::remote);
    }
}

TEST_CASE("a hostlist error is one line, also when the piece it quotes holds a line break") {
    for (const char* bad : {"gpu[1\n2]", "gpu[\r1-2]", "a\n[1-2", "gpu[2-\n1]"}) {
        INFO(bad);
        auto hosts = expand_hostlist(bad);
        REQUIRE_FALSE(hosts);
        CHECK(hosts.error().message.find_first_of("\r\n") == std::string::npos);
    }
}

TEST_CASE("a hostlist that would expand past the cap is refused") {
    CHECK_FALSE(expand_hostlist("n[1-100000000]"));
    CHECK_FALSE(expand_hostlist("a[1-300]-b[1-300]", 65536));
    CHECK(expand_hostlist("n[1-10]", 10));
    CHECK_FALSE(expand_hostlist("n[1-10],m", 10));
}
