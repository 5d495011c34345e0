// Service records: where each `tandem serve` service runs and the spec it was last given.

#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>

#include "store/job_store.hpp"
#include "store_test_support.hpp"

using namespace tandem;
using namespace tandem::store;
using tandem::store::testing::raw_exec;
using tandem::store::testing::raw_int;
using tandem::store::testing::sample_job;
using tandem::store::testing::TempDir;

namespace {

std::unique_ptr<JobStore> open_store(const std::string& path) {
    auto store = JobStore::open(path);
    INFO((store ? std::string() : store.error().message));
    REQUIRE(store);
    return std::move(*store);
}

ServiceRecord sample_service(const std::string& name) {
    ServiceRecord service;
    service.name = name;
    service.cluster = "k8s/prod";
    service.backend = "kubernetes";
    service.namespace_name = "serving";
    service.created_at = 1'700'000'000;
    service.updated_at = 1'700'000'001;
    service.version = 1;
    service.spec_json = R"({"name":")" + name + R"(","replicas":2})";
    return service;
}

ServiceRecord get_ok(JobStore& store, const std::string& name) {
    auto got = store.get_service(name);
    INFO((got ? std::string() : got.error().message));
    REQUIRE(got);
    REQUIRE(got->has_value());
    return **got;
}

void check_same(const ServiceRecord& a, const ServiceRecord& b) {
    CHECK(a.name == b.name);
    CHECK(a.cluster == b.cluster);
    CHECK(a.backend == b.backend);
    CHECK(a.namespace_name == b.namespace_name);
    CHECK(a.created_at == b.created_at);
    CHECK(a.updated_at == b.updated_at);
    CHECK(a.version == b.version);
    CHECK(a.spec_json == b.spec_json);
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("insert_service and get_service round-trip every field") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    ServiceRecord service;
    service.name = "llama-7b";
    service.cluster = "k8s/prod";
    service.backend = "kubernetes";
    service.namespace_name = "team 'a' \"serving\"";
    service.created_at = 1'700'000'123;
    service.updated_at = 1'700'000'456;
    service.version = 7;
    service.spec_json = R"({"image":"vllm:0.5","args":["--model","x; DROP TABLE services; --"]})";

    auto inserted = store->insert_service(service);
    INFO((inserted ? std::string() : inserted.error().message));
    REQUIRE(inserted);
    CHECK(*inserted);
    check_same(get_ok(*store, "llama-7b"), service);

    auto missing = store->get_service("nope");
    REQUIRE(missing);
    CHECK_FALSE(missing->has_value());
}

TEST_CASE("a second insert_service of a taken name returns false and leaves the first row") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    const auto first = sample_service("api");
    REQUIRE(store->insert_service(first).value());

    auto second = sample_service("api");
    second.cluster = "lab";
    second.namespace_name = "other";
    second.version = 3;
    second.spec_json = "{}";
    auto again = store->insert_service(second);
    REQUIRE(again);
    CHECK_FALSE(*again);
    check_same(get_ok(*store, "api"), first);
    auto all = store->list_services();
    REQUIRE(all);
    CHECK(all->size() == 1);
}

TEST_CASE("list_services is sorted by name") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    auto empty = store->list_services();
    REQUIRE(empty);
    CHECK(empty->empty());
    for (const char* name : {"web", "api", "llama", "batch"}) {
        REQUIRE(store->insert_service(sample_service(name)).value());
    }
    auto all = store->list_services();
    REQUIRE(all);
    std::vector<std::string> names;
    for (const auto& s : *all) {
        names.push_back(s.name);
    }
    CHECK(names == std::vector<std::string>{"api", "batch", "llama", "web"});
    check_same(all->front(), sample_service("api"));
}

TEST_CASE("update_service applies only at the expected version") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    const auto original = sample_service("api");
    REQUIRE(store->insert_service(original).value());

    auto updated = store->update_service("api", 1, 2, R"({"replicas":4})", 1'700'000'900);
    INFO((updated ? std::string() : updated.error().message));
    REQUIRE(updated);
    CHECK(*updated);
    auto row = get_ok(*store, "api");
    CHECK(row.version == 2);
    CHECK(row.spec_json == R"({"replicas":4})");
    CHECK(row.updated_at == 1'700'000'900);
    CHECK(row.created_at == original.created_at);
    CHECK(row.cluster == original.cluster);
    CHECK(row.backend == original.backend);
    CHECK(row.namespace_name == original.namespace_name);

    SECTION("a stale expected version changes nothing") {
        auto stale = store->update_service("api", 1, 2, R"({"replicas":9})", 1'700'001'000);
        REQUIRE(stale);
        CHECK_FALSE(*stale);
        check_same(get_ok(*store, "api"), row);
    }
    SECTION("a service that is gone is not updated") {
        auto gone = store->update_service("nope", 1, 2, "{}", 1'700'001'000);
        REQUIRE(gone);
        CHECK_FALSE(*gone);
        auto got = store->get_service("nope");
        REQUIRE(got);
        CHECK_FALSE(got->has_value());
    }
}

TEST_CASE("remove_service says whether there was such a service") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    REQUIRE(store->insert_service(sample_service("api")).value());
    REQUIRE(store->insert_service(sample_service("web")).value());

    auto removed = store->remove_service("api");
    REQUIRE(removed);
    CHECK(*removed);
    auto got = store->get_service("api");
    REQUIRE(got);
    CHECK_FALSE(got->has_value());
    auto again = store->remove_service("api");
    REQUIRE(again);
    CHECK_FALSE(*again);
    auto left = store->list_services();
    REQUIRE(left);
    REQUIRE(left->size() == 1);
    CHECK(left->front().name == "web");

    SECTION("the name can be used again") {
        REQUIRE(store->insert_service(sample_service("api")).value());
        CHECK(get_ok(*store, "api").version == 1);
    }
}

TEST_CASE("a schema 4 store gains the services table and keeps its jobs") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    {
        auto store = open_store(path);
        REQUIRE(store->insert(sample_job("old")));
    }
    // Back to what tandem of schema 4 wrote: no services table, version 4.
    REQUIRE(raw_exec(path, "DROP TABLE services; UPDATE schema_version SET version = 4") == SQLITE_OK);
    REQUIRE(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'services'") ==
            0);

    auto store = open_store(path);
    CHECK(raw_int(path, "SELECT version FROM schema_version") == k_schema_version);
    CHECK(raw_int(path, "SELECT count(*) FROM schema_version") == 1);
    CHECK(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'services'") == 1);
    auto jobs = store->list({});
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    CHECK(jobs->front().name == "old");

    auto empty = store->list_services();
    REQUIRE(empty);
    CHECK(empty->empty());
    REQUIRE(store->insert_service(sample_service("api")).value());
    check_same(get_ok(*store, "api"), sample_service("api"));
}

TEST_CASE("an unversioned file with a services table of another layout is refused and left untouched") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    REQUIRE(raw_exec(path, "CREATE TABLE services(id INTEGER PRIMARY KEY, title TEXT);"
                           "INSERT INTO services VALUES(1, 'plumbing');") == SQLITE_OK);
    const auto before = read_bytes(path);
    REQUIRE_FALSE(before.empty());

    auto refused = JobStore::open(path);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::config);
    CHECK(refused.error().message ==
          "job store " + path + " is not a tandem job store: its services table has another layout");
    CHECK(read_bytes(path) == before);
}

TEST_CASE("set_service_namespace: the namespace is recorded once the cluster has said it and a gone service is not") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    auto service = sample_service("llm");
    service.namespace_name.clear();
    REQUIRE(store->insert_service(service).value());
    auto noted = store->set_service_namespace("llm", "serving");
    REQUIRE(noted);
    CHECK(*noted);
    auto got = get_ok(*store, "llm");
    CHECK(got.namespace_name == "serving");
    CHECK(got.version == 1);
    CHECK(got.spec_json == service.spec_json);
    auto missing = store->set_service_namespace("nope", "serving");
    REQUIRE(missing);
    CHECK_FALSE(*missing);
}
