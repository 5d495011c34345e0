#include <string>

#include <catch2/catch.hpp>

#include "core/identity.hpp"

using namespace tandem;

namespace {

JobIdentity full() {
    JobIdentity id;
    id.token = "ab12cd34ef";
    id.name = "train run; 50% \"done\" | ü";
    id.group = "x9y8z7w6v5";
    id.member = "trainer/0";
    id.element = 3;
    id.user = "alice";
    id.host = "laptop.example.org";
    id.digest = "3fa9c1e2b7d0";
    id.version = "0.4.0";
    return id;
}

} // namespace

TEST_CASE("identity: one word of plain ASCII that decodes to what was encoded") {
    const auto text = encode_identity(full());
    CHECK(text.rfind("tandem:1:t=ab12cd34ef;", 0) == 0);
    CHECK(text.find_first_of(" ,|\"\n") == std::string::npos);
    CHECK(text.find("n=train%20run%3B%2050%25%20%22done%22%20%7C%20%C3%BC") != std::string::npos);
    auto back = decode_identity(text);
    REQUIRE(back);
    REQUIRE(*back);
    CHECK(**back == full());
}

TEST_CASE("identity: found after other words of a comment, absent without one") {
    auto after = decode_identity("tandem-ab12cd34ef " + encode_identity(full()) + " trailing");
    REQUIRE(after);
    REQUIRE(*after);
    CHECK((*after)->token == "ab12cd34ef");
    auto none = decode_identity("tandem-ab12cd34ef");
    REQUIRE(none);
    CHECK_FALSE(*none);
    auto glued = decode_identity("xtandem:1:t=ab12cd34ef"); // not a word of its own
    REQUIRE(glued);
    CHECK_FALSE(*glued);
}

TEST_CASE("identity: long values are cut, never the token, and the text stays bounded") {
    JobIdentity id = full();
    id.member = std::string(47, 'm') + "é"; // the cut falls inside é: it goes whole
    id.name = std::string(500, 'x');
    id.user = std::string(40, '%');          // 32 bytes, 96 encoded
    id.host = "far-away";
    const auto text = encode_identity(id);
    CHECK(text.size() <= k_identity_budget);
    auto back = decode_identity(text);
    REQUIRE(back);
    REQUIRE(*back);
    CHECK((*back)->token == id.token);
    CHECK((*back)->group == id.group);
    CHECK((*back)->element == id.element);
    CHECK((*back)->member == std::string(47, 'm'));
    CHECK((*back)->name == std::string(64, 'x'));
    CHECK((*back)->user == std::string(32, '%')); // 96 bytes encoded: the budget's last room
    CHECK((*back)->host.empty());                 // no room left: left out
    CHECK((*back)->version.empty());

    // A name of two-byte characters (six bytes encoded each) runs out of the budget itself: it is cut
    // at a whole character, and what follows is left out.
    id.name.clear();
    for (int i = 0; i < 40; ++i) {
        id.name += "é";
    }
    const auto tight = encode_identity(id);
    CHECK(tight.size() <= k_identity_budget);
    auto cut = decode_identity(tight);
    REQUIRE(cut);
    REQUIRE(*cut);
    CHECK((*cut)->name.size() < 64);
    CHECK((*cut)->name.size() % 2 == 0);
    CHECK(id.name.rfind((*cut)->name, 0) == 0);
    CHECK((*cut)->user.empty());
}

TEST_CASE("identity: what a cluster returns is checked field by field, with one-line errors") {
    auto error_of = [](const std::string& text) {
        auto r = decode_identity(text);
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find('\n') == std::string::npos);
        return r.error().message;
    };
    CHECK_THAT(error_of("tandem:2:t=ab12cd34ef"), Catch::Contains("not version 1"));
    CHECK_THAT(error_of("tandem:1:n=x"), Catch::Contains("no valid submit token"));
    CHECK_THAT(error_of("tandem:1:t=AB12CD34EF"), Catch::Contains("no valid submit token"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;n=a%0Ab"), Catch::Contains("control character in 'n'"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;n=a%4"), Catch::Contains("cut escape"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;n=a%zz"), Catch::Contains("bad escape"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;n=a\"b"), Catch::Contains("unescaped character"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;t=cd34ef56ab"), Catch::Contains("given twice"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;e=-1"), Catch::Contains("sweep element"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;g=NOPE"), Catch::Contains("group's token"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;noequals"), Catch::Contains("key=value"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;\x01=x;\x01=y"), Catch::Contains("'?' is given twice"));
    CHECK_THAT(error_of("tandem:1:t=ab12cd34ef;n=" + std::string(2000, 'x')), Catch::Contains("longer than"));
    // A key a newer tandem writes is skipped.
    auto future = decode_identity("tandem:1:t=ab12cd34ef;z=anything");
    REQUIRE(future);
    REQUIRE(*future);
    CHECK((*future)->token == "ab12cd34ef");
}
