// gitignore(5) rules as the workdir upload applies them.

#include <catch2/catch.hpp>

#include "backends/upload/gitignore.hpp"

using namespace tandem::upload;

TEST_CASE("glob: * and ? stay within a folder, ** crosses, classes and escapes") {
    CHECK(glob_match("*.log", "a.log"));
    CHECK_FALSE(glob_match("*.log", "a/b.log"));
    CHECK(glob_match("a?c", "abc"));
    CHECK_FALSE(glob_match("a?c", "a/c"));
    CHECK(glob_match("**/x", "x"));
    CHECK(glob_match("**/x", "a/b/x"));
    CHECK(glob_match("a/**", "a/b/c"));
    CHECK(glob_match("a/**/b", "a/b"));
    CHECK(glob_match("a/**/b", "a/x/y/b"));
    CHECK_FALSE(glob_match("a/**/b", "a/x/y/c"));
    CHECK(glob_match("[a-c]x", "bx"));
    CHECK_FALSE(glob_match("[!a-c]x", "bx"));
    CHECK(glob_match("\\*x", "*x"));
    CHECK_FALSE(glob_match("\\*x", "ax"));
    CHECK(glob_match("[x", "[x")); // an unclosed class is literal
}

TEST_CASE("gitignore: names anywhere, anchored paths, folders only, negation, last rule wins") {
    GitIgnore g;
    g.add("# comment\n\n*.log\n!keep.log\n/build\ndata/\ndocs/*.pdf\n**/cache/**\nnotes.txt   \n\\#hash\n");
    CHECK(g.ignored("a.log", false));
    CHECK(g.ignored("sub/b.log", false));
    CHECK_FALSE(g.ignored("keep.log", false));
    CHECK_FALSE(g.ignored("sub/keep.log", false));
    CHECK(g.ignored("build", true));
    CHECK(g.ignored("build", false));
    CHECK_FALSE(g.ignored("src/build", true)); // anchored to the root
    CHECK(g.ignored("data", true));
    CHECK(g.ignored("x/data", true));
    CHECK_FALSE(g.ignored("data", false)); // trailing slash: folders only
    CHECK(g.ignored("docs/a.pdf", false));
    CHECK_FALSE(g.ignored("docs/sub/a.pdf", false));
    CHECK(g.ignored("x/cache/y", false));
    CHECK(g.ignored("notes.txt", false)); // trailing spaces dropped
    CHECK(g.ignored("#hash", false));
    CHECK_FALSE(g.ignored("main.py", false));
}

TEST_CASE("a nested .gitignore applies below its own folder only") {
    GitIgnore g;
    g.add("*.tmp\n", "");
    g.add("/out\n!important.tmp\n", "sub");
    CHECK(g.ignored("sub/out", true));
    CHECK_FALSE(g.ignored("out", true));
    CHECK(g.ignored("a.tmp", false));
    CHECK_FALSE(g.ignored("sub/important.tmp", false));
    CHECK(g.ignored("important.tmp", false));
    CHECK_FALSE(g.ignored("subx/out", true));
}
