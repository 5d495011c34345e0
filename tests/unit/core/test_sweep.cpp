// Sweeps (core/sweep.hpp): the grid and its order, explicit elements, SkyPilot's --num-jobs, the
// command-line axis, what an element sees and how it is named. Untrusted text stays bounded.

#include <catch2/catch.hpp>

#include "core/sweep.hpp"

using namespace tandem;

namespace {

std::vector<std::string> labels(const Sweep& s) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        out.push_back(sweep_element_label(s, i));
    }
    return out;
}

} // namespace

TEST_CASE("sweep: a 3x2 grid is six elements, the first key varying slowest") {
    auto s = sweep_grid({{"lr", {"0.1", "0.01", "0.001"}}, {"bs", {"16", "32"}}});
    REQUIRE(s);
    CHECK(s->keys == std::vector<std::string>{"lr", "bs"});
    CHECK(labels(*s) == std::vector<std::string>{"lr=0.1 bs=16", "lr=0.1 bs=32", "lr=0.01 bs=16",
                                                 "lr=0.01 bs=32", "lr=0.001 bs=16", "lr=0.001 bs=32"});
    const auto env = sweep_element_env(*s, 3);
    using Env = std::vector<std::pair<std::string, std::string>>;
    CHECK(env == Env{{"lr", "0.01"},
                     {"bs", "32"},
                     {"TANDEM_SWEEP_INDEX", "3"},
                     {"TANDEM_SWEEP_SIZE", "6"},
                     {"SKYPILOT_JOB_RANK", "3"},
                     {"SKYPILOT_NUM_JOBS", "6"}});
}

TEST_CASE("sweep: a grid refuses bad keys, repeated keys, empty axes and a size over the bound") {
    CHECK(sweep_grid({}).error() == "no values to sweep over");
    CHECK(sweep_grid({{"1lr", {"1"}}}).error() ==
          "'1lr' is not a variable name (letters, digits and _, not starting with a digit)");
    CHECK(sweep_grid({{"TANDEM_SWEEP_INDEX", {"1"}}}).error() ==
          "'TANDEM_SWEEP_INDEX': names starting with TANDEM_ are tandem's own");
    CHECK(sweep_grid({{"lr", {"1"}}, {"lr", {"2"}}}).error() == "lr is given twice");
    CHECK(sweep_grid({{"lr", {}}}).error() == "lr has no values");
    std::vector<std::string> hundred(100, "x"), thousand(1000, "y");
    CHECK(sweep_grid({{"a", hundred}, {"b", hundred}})->size() == 10000);
    CHECK(sweep_grid({{"a", hundred}, {"b", hundred}, {"c", {"1", "2"}}}).error() ==
          "the grid 100 x 100 x 2 has more than 10000 elements");
    // A product that would overflow is refused, not wrapped.
    CHECK_FALSE(sweep_grid({{"a", thousand}, {"b", thousand}, {"c", thousand}, {"d", thousand}}));
    CHECK(sweep_grid({{"a", {std::string(5000, 'v')}}}).error() == "a: a value of 5000 bytes (at most 4096)");
}

TEST_CASE("sweep: explicit elements set the same keys, in any order") {
    auto s = sweep_elements({{{"lr", "0.1"}, {"opt", "adam"}}, {{"opt", "sgd"}, {"lr", "1"}}});
    REQUIRE(s);
    CHECK(labels(*s) == std::vector<std::string>{"lr=0.1 opt=adam", "lr=1 opt=sgd"});
    CHECK(sweep_elements({{{"lr", "0.1"}}, {{"lr", "1"}, {"opt", "sgd"}}}).error() ==
          "element 1: opt is not set by element 0 (every element sets the same keys)");
    CHECK(sweep_elements({{{"lr", "0.1"}, {"opt", "adam"}}, {{"lr", "1"}}}).error() ==
          "element 1: opt is missing (every element sets the same keys)");
    CHECK(sweep_elements({{{"lr", "1"}}, {{"lr", "1"}, {"lr", "2"}}}).error() == "element 1: lr is given twice");
    CHECK(sweep_elements({}).error() == "no elements");
    CHECK(sweep_elements({{}}).error() == "element 0 sets no values");
}

TEST_CASE("sweep: SkyPilot's --num-jobs is N elements that see their rank") {
    auto s = sweep_ranks(4);
    REQUIRE(s);
    CHECK(s->size() == 4);
    CHECK(sweep_element_label(*s, 2) == "#2");
    using Env = std::vector<std::pair<std::string, std::string>>;
    CHECK(sweep_element_env(*s, 2) == Env{{"TANDEM_SWEEP_INDEX", "2"},
                                          {"TANDEM_SWEEP_SIZE", "4"},
                                          {"SKYPILOT_JOB_RANK", "2"},
                                          {"SKYPILOT_NUM_JOBS", "4"}});
    CHECK(sweep_ranks(0).error() == "0 elements: at least 1");
    CHECK(sweep_ranks(10001).error() == "10001 elements (at most 10000)");
}

TEST_CASE("sweep: --sweep KEY=a,b,c with escaped commas") {
    auto a = parse_sweep_axis("lr=0.1,0.01");
    REQUIRE(a);
    CHECK(a->first == "lr");
    CHECK(a->second == std::vector<std::string>{"0.1", "0.01"});
    auto b = parse_sweep_axis(R"(args=--a 1\,2,--b,c:\\d\x)");
    REQUIRE(b);
    CHECK(b->second == std::vector<std::string>{"--a 1,2", "--b", R"(c:\d\x)"});
    CHECK(parse_sweep_axis("lr=")->second == std::vector<std::string>{""});
    CHECK(parse_sweep_axis("lr").error() == "'lr' is not KEY=VALUE[,VALUE...]");
    CHECK(parse_sweep_axis("=1").error() == "'=1' is not KEY=VALUE[,VALUE...]");
    CHECK(parse_sweep_axis("a-b=1").error() ==
          "'a-b' is not a variable name (letters, digits and _, not starting with a digit)");
    std::string many = "k=";
    for (int i = 0; i < 20000; ++i) {
        many += "1,";
    }
    CHECK(parse_sweep_axis(many).error() == "k: more than 10000 values");
}

TEST_CASE("sweep: a label is one line of bounded length, cut between UTF-8 characters") {
    auto s = sweep_grid({{"note", {"two\nlines", std::string(36, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9"}}});
    REQUIRE(s);
    CHECK(sweep_element_label(*s, 0) == "note=two lines");
    CHECK(sweep_element_label(*s, 1) == "note=" + std::string(36, 'a') + "...");
    CHECK(sweep_element_label(*s, 7) == "#7");
}
