#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backends/k8s/watch_events.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

TEST_CASE("watch: each event type is parsed with its object") {
    for (const char* type : {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"}) {
        const std::string line = std::string(R"({"type":")") + type +
                                 R"(","object":{"kind":"Job","apiVersion":"batch/v1","metadata":)"
                                 R"({"name":"tandem-3-serve","resourceVersion":"48213"}}})" +
                                 "\n";
        auto ev = parse_watch_line(line);
        REQUIRE(ev);
        CHECK(ev->type == type);
        CHECK(ev->object["metadata"]["resourceVersion"] == "48213");
        CHECK_FALSE(ev->gone);
    }
}

TEST_CASE("watch: a line ending in CRLF is accepted") {
    auto ev = parse_watch_line("{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\"}}\r\n");
    REQUIRE(ev);
    CHECK(ev->object["kind"] == "Pod");
}

TEST_CASE("watch: ERROR 410 means list again") {
    // What a v1.20 server sends when the resourceVersion has been compacted away.
    auto ev = parse_watch_line(
        R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)j"
        R"j("message":"too old resource version: 1200 (48213)","reason":"Expired","code":410}})j");
    REQUIRE(ev);
    CHECK(ev->type == "ERROR");
    CHECK(ev->gone);
    CHECK(ev->object["reason"] == "Expired");
}

TEST_CASE("watch: another ERROR is an error classified by its code") {
    auto ev = parse_watch_line(
        R"({"type":"ERROR","object":{"kind":"Status","status":"Failure",)"
        R"("message":"etcdserver: request timed out","reason":"InternalError","code":500}})");
    REQUIRE_FALSE(ev);
    CHECK(ev.error().kind == ErrorKind::unavailable);
    CHECK(ev.error().message == "Kubernetes watch: the API server ended the watch with 500 InternalError: "
                                "etcdserver: request timed out");

    auto forbidden = parse_watch_line(R"({"type":"ERROR","object":{"kind":"Status","code":403,)"
                                      R"("reason":"Forbidden","message":"jobs.batch is forbidden"}})");
    REQUIRE_FALSE(forbidden);
    CHECK(forbidden.error().kind == ErrorKind::unauthorized);
}

TEST_CASE("watch: malformed lines are errors quoting the line") {
    auto not_json = parse_watch_line("{\"type\":\"ADDED\",\"object\":{\"kind\":");
    REQUIRE_FALSE(not_json);
    CHECK(not_json.error().kind == ErrorKind::remote);
    CHECK(
        not_json.error().message ==
        "Kubernetes watch: malformed event (not a JSON object): '{\"type\":\"ADDED\",\"object\":{\"kind\":'");

    auto unknown = parse_watch_line(R"({"type":"CHANGED","object":{}})");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().message ==
          R"(Kubernetes watch: malformed event (unknown type CHANGED): '{"type":"CHANGED","object":{}}')");

    auto no_object = parse_watch_line(R"({"type":"ADDED"})");
    REQUIRE_FALSE(no_object);
    CHECK(no_object.error().message ==
          R"(Kubernetes watch: malformed event (no object): '{"type":"ADDED"}')");

    auto empty = parse_watch_line("\n");
    REQUIRE_FALSE(empty);
    CHECK(empty.error().message == "Kubernetes watch: malformed event (empty line): ''");

    auto array = parse_watch_line("[1,2]");
    REQUIRE_FALSE(array);
    CHECK(array.error().message == "Kubernetes watch: malformed event (not a JSON object): '[1,2]'");
}

TEST_CASE("watch: a long malformed line is quoted by its first 80 characters only") {
    const std::string line = "{\"type\":\"ADDED\",\"object\":{\"data\":\"" + std::string(200, 'x');
    auto ev = parse_watch_line(line);
    REQUIRE_FALSE(ev);
    CHECK(ev.error().message ==
          "Kubernetes watch: malformed event (not a JSON object): '" + line.substr(0, 80) + "...'");
}

namespace {

std::vector<std::string> recorded_watch_lines() {
    std::ifstream in(std::string(TANDEM_FIXTURES) + "/k8s/recorded-v1.20/watch_jobs.jsonl");
    REQUIRE(in.good());
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

} // namespace

TEST_CASE("watch recorded: a Job's life applied to an empty list, then 410 for an old resourceVersion") {
    // From the v1.20 testbed: `watch=true&allowWatchBookmarks=true` while a Job ran, then a watch from
    // resourceVersion 1 after etcd had moved on.
    const auto lines = recorded_watch_lines();
    REQUIRE(lines.size() == 5);
    json list = {{"kind", "JobList"}, {"metadata", {{"resourceVersion", "527"}}}, {"items", json::array()}};
    std::vector<std::string> types;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        auto ev = parse_watch_line(lines[i]);
        REQUIRE(ev);
        types.push_back(ev->type);
        apply_watch_event(list, *ev);
    }
    CHECK(types == std::vector<std::string>{"ADDED", "MODIFIED", "MODIFIED", "BOOKMARK"});
    REQUIRE(list["items"].size() == 1);
    CHECK(list["items"][0]["metadata"]["name"] == "w1");
    CHECK(list["items"][0]["status"]["succeeded"] == 1);
    CHECK(list["metadata"]["resourceVersion"] == "565");

    auto gone = parse_watch_line(lines.back());
    REQUIRE(gone);
    CHECK(gone->gone);
    CHECK(gone->object["message"] == "too old resource version: 1 (527)");
    apply_watch_event(list, *gone);
    CHECK(list["metadata"]["resourceVersion"] == "565");
    CHECK(list["items"].size() == 1);
}

TEST_CASE("watch: DELETED removes the item with the same uid, not one with the same name") {
    json list = {
        {"metadata", {{"resourceVersion", "10"}}},
        {"items", json::array({{{"metadata", {{"name", "a"}, {"uid", "1"}, {"resourceVersion", "5"}}}},
                               {{"metadata", {{"name", "b"}, {"uid", "2"}, {"resourceVersion", "6"}}}}})}};
    WatchEvent recreated{
        "DELETED", {{"metadata", {{"name", "a"}, {"uid", "9"}, {"resourceVersion", "11"}}}}, false};
    apply_watch_event(list, recreated);
    CHECK(list["items"].size() == 2);
    CHECK(list["metadata"]["resourceVersion"] == "11");
    WatchEvent deleted{
        "DELETED", {{"metadata", {{"name", "a"}, {"uid", "1"}, {"resourceVersion", "12"}}}}, false};
    apply_watch_event(list, deleted);
    REQUIRE(list["items"].size() == 1);
    CHECK(list["items"][0]["metadata"]["name"] == "b");
    WatchEvent modified{"MODIFIED",
                        {{"metadata", {{"name", "b"}, {"uid", "2"}, {"resourceVersion", "13"}}}, {"x", 1}},
                        false};
    apply_watch_event(list, modified);
    REQUIRE(list["items"].size() == 1);
    CHECK(list["items"][0]["x"] == 1);
    CHECK(list["metadata"]["resourceVersion"] == "13");
}
