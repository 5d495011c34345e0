#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <set>

#include <catch2/catch.hpp>

#include "store/job_store.hpp"
#include "store_test_support.hpp"

using namespace tandem;
using namespace tandem::store;
using tandem::store::testing::raw_exec;
using tandem::store::testing::raw_int;
using tandem::store::testing::raw_text;
using tandem::store::testing::sample_job;
using tandem::store::testing::TempDir;

namespace {

std::unique_ptr<JobStore> open_ok(const std::string& path) {
    auto store = JobStore::open(path);
    INFO((store ? std::string() : store.error().message));
    REQUIRE(store);
    return std::move(*store);
}

std::int64_t insert_ok(JobStore& store, const JobRecord& job) {
    auto id = store.insert(job);
    INFO((id ? std::string() : id.error().message));
    REQUIRE(id);
    return *id;
}

JobRecord get_ok(JobStore& store, std::int64_t id) {
    auto got = store.get(id);
    REQUIRE(got);
    REQUIRE(got->has_value());
    return **got;
}

std::vector<std::int64_t> ids_of(const Result<std::vector<JobRecord>>& jobs) {
    INFO((jobs ? std::string() : jobs.error().message));
    REQUIRE(jobs);
    std::vector<std::int64_t> ids;
    for (const auto& job : *jobs) {
        ids.push_back(job.id);
    }
    return ids;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("a new store is created in WAL mode at the current schema version") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    { auto store = open_ok(path); }
    CHECK(raw_text(path, "PRAGMA journal_mode") == "wal");
    CHECK(raw_int(path, "SELECT count(*) FROM schema_version") == 1);
    CHECK(raw_int(path, "SELECT version FROM schema_version") == k_schema_version);
    CHECK(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type='index' AND name LIKE 'jobs_%'") == 4);

    SECTION("reopening an existing store keeps its rows and its single version row") {
        {
            auto store = open_ok(path);
            insert_ok(*store, sample_job("kept"));
        }
        auto store = open_ok(path);
        auto jobs = store->list({});
        REQUIRE(jobs);
        REQUIRE(jobs->size() == 1);
        CHECK(jobs->front().name == "kept");
        CHECK(raw_int(path, "SELECT count(*) FROM schema_version") == 1);
    }
    SECTION("a file whose schema_version table is empty is initialised") {
        REQUIRE(raw_exec(path, "DELETE FROM schema_version") == SQLITE_OK);
        auto store = open_ok(path);
        CHECK(raw_int(path, "SELECT version FROM schema_version") == k_schema_version);
        CHECK(raw_int(path, "SELECT count(*) FROM schema_version") == 1);
    }
}

TEST_CASE("insert and get round-trip every field") {
    TempDir dir;
    auto store = open_ok(dir.file("jobs.db"));

    JobRecord job;
    job.id = 999; // ignored: the store assigns ids
    job.name = "train 'llama' \"7b\"; DROP TABLE jobs; --";
    job.cluster = "slurm-a";
    job.backend = "slurm";
    job.remote_id = "12345";
    job.state = JobState::failed;
    job.reason = "exit code 3";
    job.exit_code = 3;
    job.submitted_at = 1'700'000'000;
    job.started_at = 1'700'000'010;
    job.ended_at = 1'700'000'020;
    job.updated_at = 1'700'000'030;
    job.spec_json = R"({"run":"echo héllo ✓","envs":{"A":"1"}})";
    job.placement_json = R"({"cluster":"slurm-a","pool":"gpu"})";
    job.gpus = "H100:8";
    job.num_nodes = 4;

    const auto first = insert_ok(*store, job);
    auto got = store->get(first);
    REQUIRE(got);
    REQUIRE(got->has_value());
    const JobRecord& back = **got;
    CHECK(back.id == first);
    CHECK(back.name == job.name);
    CHECK(back.cluster == job.cluster);
    CHECK(back.backend == job.backend);
    CHECK(back.remote_id == job.remote_id);
    CHECK(back.state == job.state);
    CHECK(back.reason == job.reason);
    CHECK(back.exit_code == job.exit_code);
    CHECK(back.submitted_at == job.submitted_at);
    CHECK(back.started_at == job.started_at);
    CHECK(back.ended_at == job.ended_at);
    CHECK(back.updated_at == job.updated_at);
    CHECK(back.spec_json == job.spec_json);
    CHECK(back.placement_json == job.placement_json);
    CHECK(back.gpus == job.gpus);
    CHECK(back.num_nodes == job.num_nodes);

    SECTION("absent optionals come back absent, and ids increase") {
        const auto second = insert_ok(*store, sample_job("plain"));
        const auto third = insert_ok(*store, sample_job("plain"));
        CHECK(second > first);
        CHECK(third > second);
        auto plain = store->get(second);
        REQUIRE(plain);
        REQUIRE(plain->has_value());
        CHECK((*plain)->state == JobState::pending);
        CHECK((*plain)->remote_id.empty());
        CHECK_FALSE((*plain)->exit_code.has_value());
        CHECK_FALSE((*plain)->started_at.has_value());
        CHECK_FALSE((*plain)->ended_at.has_value());
        CHECK((*plain)->num_nodes == 1);
    }
    SECTION("a missing id is absent, not an error") {
        auto missing = store->get(first + 100);
        REQUIRE(missing);
        CHECK_FALSE(missing->has_value());
    }
    SECTION("UNKNOWN is never stored") {
        auto unknown = sample_job("unknown");
        unknown.state = JobState::unknown;
        auto refused = store->insert(unknown);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().kind == ErrorKind::internal);
    }
}

TEST_CASE("a refresh that only repeats a row confirmed moments ago is not written") {
    TempDir dir;
    auto store = open_ok(dir.file("jobs.db"));
    const auto id = insert_ok(*store, sample_job("job"));
    auto fetch = [&] { return get_ok(*store, id); };
    const JobUpdate running{JobState::running, "", std::nullopt, 100, std::nullopt};
    auto first = store->update_many({{id, running}}, 101);
    REQUIRE(first);
    CHECK(first->front());
    CHECK(fetch().updated_at == 101);

    SECTION("the same answer within 5 s: applied, nothing written, the age kept") {
        auto again = store->update_many({{id, running}}, 105);
        REQUIRE(again);
        CHECK(again->front()); // the job is live and says this: not a lost race
        CHECK(fetch().updated_at == 101);
    }
    SECTION("the same answer 5 s later: written, the age renewed") {
        REQUIRE(store->update_many({{id, running}}, 106));
        CHECK(fetch().updated_at == 106);
    }
    SECTION("any difference is written at once") {
        SECTION("reason") {
            REQUIRE(store->update_many(
                {{id, {JobState::running, "rank 1: restarted", std::nullopt, 100, std::nullopt}}}, 102));
            CHECK(fetch().reason == "rank 1: restarted");
            CHECK(fetch().updated_at == 102);
        }
        SECTION("state") {
            REQUIRE(store->update_many({{id, {JobState::succeeded, "exit code 0", 0, 100, 150}}}, 102));
            const auto job = fetch();
            CHECK(job.state == JobState::succeeded);
            CHECK(job.exit_code == 0);
            CHECK(job.ended_at == 150);
            CHECK(job.updated_at == 102);
        }
        SECTION("a first start time") {
            const auto other = insert_ok(*store, sample_job("other"));
            const JobUpdate pending{JobState::running, "", std::nullopt, std::nullopt, std::nullopt};
            REQUIRE(store->update_many({{other, pending}}, 101));
            REQUIRE(store->update_many({{other, running}}, 102));
            const auto got = get_ok(*store, other);
            CHECK(got.started_at == 100);
            CHECK(got.updated_at == 102);
        }
    }
    SECTION("a row that has moved to another remote id is not confirmed") {
        REQUIRE(store->set_remote_id(id, "77"));
        auto stale = store->update_many({{id, running}}, 102, {"41"});
        REQUIRE(stale);
        CHECK_FALSE(stale->front());
    }
}

TEST_CASE("update applies refresh results") {
    TempDir dir;
    auto store = open_ok(dir.file("jobs.db"));
    const auto id = insert_ok(*store, sample_job("job"));
    auto fetch = [&] { return get_ok(*store, id); };

    REQUIRE(store->update(id, {JobState::running, "", std::nullopt, 100, std::nullopt}, 101));
    auto job = fetch();
    CHECK(job.state == JobState::running);
    CHECK(job.started_at == 100);
    CHECK(job.updated_at == 101);
    CHECK_FALSE(job.ended_at.has_value());

    SECTION("started_at is set only once") {
        REQUIRE(store->update(id, {JobState::running, "", std::nullopt, 200, std::nullopt}, 201));
        job = fetch();
        CHECK(job.started_at == 100);
        CHECK(job.updated_at == 201);
    }
    SECTION("UNKNOWN keeps the last known state and its age") {
        REQUIRE(store->update(id, {JobState::unknown, "unreachable", std::nullopt, 300, 400}, 500));
        job = fetch();
        CHECK(job.state == JobState::running);
        CHECK(job.reason.empty());
        CHECK(job.started_at == 100);
        CHECK_FALSE(job.ended_at.has_value());
        CHECK(job.updated_at == 101);
    }
    SECTION("a terminal update records reason, exit code and end; later updates keep the exit code") {
        REQUIRE(store->update(id, {JobState::failed, "exit code 3", 3, std::nullopt, 400}, 401));
        job = fetch();
        CHECK(job.state == JobState::failed);
        CHECK(job.reason == "exit code 3");
        CHECK(job.exit_code == 3);
        CHECK(job.ended_at == 400);
        CHECK(job.updated_at == 401);

        // A terminal state is final: a refresh racing with a cancel cannot rewrite it.
        REQUIRE(store->update(id, {JobState::cancelled, "cancelled by user", std::nullopt, std::nullopt, 500},
                              402));
        job = fetch();
        CHECK(job.state == JobState::failed);
        CHECK(job.reason == "exit code 3");
        CHECK(job.exit_code == 3);
        CHECK(job.ended_at == 400);
        CHECK(job.updated_at == 401);
    }
    SECTION("a missing job is not_found, whatever the state") {
        for (auto state : {JobState::running, JobState::unknown}) {
            auto missing = store->update(id + 1, {state, "", std::nullopt, std::nullopt, std::nullopt}, 1);
            REQUIRE_FALSE(missing);
            CHECK(missing.error().kind == ErrorKind::not_found);
        }
    }
    SECTION("set_remote_id records the backend's id, and not_found for a missing job") {
        REQUIRE(store->set_remote_id(id, "4242"));
        CHECK(fetch().remote_id == "4242");
        auto missing = store->set_remote_id(id + 1, "1");
        REQUIRE_FALSE(missing);
        CHECK(missing.error().kind == ErrorKind::not_found);
    }
}

TEST_CASE("list filters and orders by id") {
    TempDir dir;
    auto store = open_ok(dir.file("jobs.db"));
    auto add = [&](const std::string& name, const std::string& cluster, JobState state,
                   std::optional<std::int64_t> ended_at) {
        auto job = sample_job(name);
        job.cluster = cluster;
        job.state = state;
        job.ended_at = ended_at;
        return insert_ok(*store, job);
    };
    const auto pending = add("a", "local", JobState::pending, std::nullopt);
    const auto running = add("b", "slurm-a", JobState::running, std::nullopt);
    const auto old_done = add("a", "slurm-a", JobState::succeeded, 100);
    const auto new_failed = add("c", "local", JobState::failed, 200);
    const auto new_cancelled = add("a", "local", JobState::cancelled, 300);
    const auto starting = add("d", "k8s", JobState::starting, std::nullopt);

    using Ids = std::vector<std::int64_t>;
    CHECK(ids_of(store->list({})) == Ids{pending, running, old_done, new_failed, new_cancelled, starting});

    JobFilter active;
    active.active_only = true;
    CHECK(ids_of(store->list(active)) == Ids{pending, running, starting});
    active.ended_after = 150; // ignored with active_only
    CHECK(ids_of(store->list(active)) == Ids{pending, running, starting});

    JobFilter recent;
    recent.ended_after = 200; // inclusive
    CHECK(ids_of(store->list(recent)) == Ids{pending, running, new_failed, new_cancelled, starting});

    JobFilter by_ids;
    by_ids.ids = {starting, pending, old_done, 9999};
    CHECK(ids_of(store->list(by_ids)) == Ids{pending, old_done, starting});

    JobFilter by_cluster;
    by_cluster.cluster = "local";
    CHECK(ids_of(store->list(by_cluster)) == Ids{pending, new_failed, new_cancelled});

    JobFilter by_name;
    by_name.name = "a";
    CHECK(ids_of(store->list(by_name)) == Ids{pending, old_done, new_cancelled});

    JobFilter by_state;
    by_state.state = JobState::running;
    CHECK(ids_of(store->list(by_state)) == Ids{running});

    JobFilter combined;
    combined.name = "a";
    combined.cluster = "local";
    combined.ended_after = 250;
    combined.ids = {pending, old_done, new_cancelled};
    CHECK(ids_of(store->list(combined)) == Ids{pending, new_cancelled});

    JobFilter quoted;
    quoted.name = "a' OR '1'='1";
    CHECK(ids_of(store->list(quoted)).empty());
}

TEST_CASE("listing 10,000 jobs returns them all, in order") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    { auto store = open_ok(path); }
    // Fill in one transaction behind the store's back; only list() is under test here.
    REQUIRE(raw_exec(path, R"sql(
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
        INSERT INTO jobs(name, cluster, backend, state, submitted_at, updated_at, spec_json, placement_json, gpus)
        SELECT 'job-' || i, 'local', 'local', CASE WHEN i % 10 = 0 THEN 'RUNNING' ELSE 'SUCCEEDED' END,
               i, i, '{"name":"job","run":"python train.py --epochs 10"}', '{"cluster":"local"}', 'H100:8'
        FROM n;
    )sql") == SQLITE_OK);
    auto store = open_ok(path);

    // Speed is measured in bench/, not asserted here.
    auto jobs = store->list({});
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 10'000);
    CHECK(
        std::is_sorted(jobs->begin(), jobs->end(), [](const auto& a, const auto& b) { return a.id < b.id; }));

    JobFilter active;
    active.active_only = true;
    auto running = store->list(active);
    REQUIRE(running);
    CHECK(running->size() == 1'000);
}

TEST_CASE("a store written by a newer tandem is refused and left untouched") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    {
        auto store = open_ok(path);
        insert_ok(*store, sample_job("from the future"));
    }
    // As a newer tandem would leave it: in rollback-journal mode, so any write by us would show in the bytes.
    REQUIRE(raw_exec(path, "PRAGMA journal_mode=DELETE; UPDATE schema_version SET version = 99") ==
            SQLITE_OK);
    const auto before = read_bytes(path);
    REQUIRE_FALSE(before.empty());

    auto refused = JobStore::open(path);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::config);
    CHECK(refused.error().message ==
          "job store " + path + " has schema version 99, newer than this tandem understands (" + std::to_string(k_schema_version) + ")");
    CHECK(refused.error().hint == "upgrade tandem; the file was left untouched");

    CHECK(read_bytes(path) == before);
    CHECK(raw_text(path, "PRAGMA journal_mode") == "delete");
    CHECK(raw_int(path, "SELECT version FROM schema_version") == 99);
    CHECK(raw_int(path, "SELECT count(*) FROM jobs") == 1);
    CHECK(raw_text(path, "SELECT name FROM jobs") == "from the future");
}

TEST_CASE("a file that cannot be a job store is an error value") {
    TempDir dir;

    SECTION("garbage bytes") {
        const auto path = dir.file("jobs.db");
        {
            std::ofstream out(path, std::ios::binary);
            for (int i = 0; i < 4096; ++i) {
                out.put(static_cast<char>((i * 131 + 7) % 251));
            }
        }
        auto store = JobStore::open(path);
        REQUIRE_FALSE(store);
        CHECK(store.error().kind == ErrorKind::internal);
        CHECK_THAT(store.error().message, Catch::StartsWith("cannot open job store " + path + ": "));
        CHECK_THAT(store.error().message, Catch::Contains("not a database"));
    }
    SECTION("a row with a state this tandem does not know") {
        const auto path = dir.file("jobs.db");
        auto store = open_ok(path);
        const auto id = insert_ok(*store, sample_job("odd"));
        REQUIRE(raw_exec(path, "UPDATE jobs SET state = 'BOGUS'") == SQLITE_OK);
        auto got = store->get(id);
        REQUIRE_FALSE(got);
        CHECK_THAT(got.error().message, Catch::Contains("unrecognised state 'BOGUS'"));
        auto listed = store->list({});
        REQUIRE_FALSE(listed);
        CHECK(listed.error().kind == ErrorKind::internal);
    }
    SECTION("a folder that does not exist") {
        const auto path = dir.file("missing/jobs.db");
        auto store = JobStore::open(path);
        REQUIRE_FALSE(store);
        CHECK(store.error().kind == ErrorKind::internal);
        CHECK_THAT(store.error().message, Catch::StartsWith("cannot open job store " + path + ": "));
    }
}

TEST_CASE("a group's members point at its row and are listed by it") {
    TempDir dir;
    auto store = open_ok(dir.file("jobs.db"));
    auto group = sample_job("rl");
    group.backend = JobRecord::k_group_backend;
    group.remote_id = "";
    const auto gid = insert_ok(*store, group);
    auto member = sample_job("trainer");
    member.parent_id = gid;
    member.member = "trainer";
    const auto m1 = insert_ok(*store, member);
    member.member = member.name = "rollout";
    const auto m2 = insert_ok(*store, member);
    const auto plain = insert_ok(*store, sample_job("plain"));

    const auto got = get_ok(*store, m2);
    CHECK(got.parent_id == gid);
    CHECK(got.member == "rollout");
    CHECK(get_ok(*store, gid).is_group());
    CHECK_FALSE(get_ok(*store, plain).parent_id);

    using Ids = std::vector<std::int64_t>;
    JobFilter top;
    top.top_level_only = true;
    CHECK(ids_of(store->list(top)) == Ids{gid, plain});
    JobFilter members;
    members.parent_ids = {gid};
    CHECK(ids_of(store->list(members)) == Ids{m1, m2});
}

TEST_CASE("a schema 2 store gains the group columns and keeps its rows") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    {
        auto store = open_ok(path);
        insert_ok(*store, sample_job("old"));
    }
    // Back to what tandem of schema 2 wrote: no group columns, version 2.
    REQUIRE(raw_exec(path, "DROP INDEX jobs_parent; ALTER TABLE jobs DROP COLUMN member; "
                           "ALTER TABLE jobs DROP COLUMN parent_id; UPDATE schema_version SET version = 2") ==
            SQLITE_OK);
    auto store = open_ok(path);
    CHECK(raw_int(path, "SELECT version FROM schema_version") == k_schema_version);
    auto jobs = store->list({});
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    CHECK(jobs->front().name == "old");
    CHECK_FALSE(jobs->front().parent_id);
    CHECK(jobs->front().member.empty());
}

TEST_CASE("a schema 3 store gains the submit token column and keeps its rows") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    {
        auto store = open_ok(path);
        insert_ok(*store, sample_job("old"));
    }
    REQUIRE(raw_exec(path, "DROP INDEX jobs_submit_token; ALTER TABLE jobs DROP COLUMN submit_token; "
                           "UPDATE schema_version SET version = 3") ==
            SQLITE_OK);
    auto store = open_ok(path);
    CHECK(raw_int(path, "SELECT version FROM schema_version") == k_schema_version);
    auto jobs = store->list({});
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 1);
    CHECK(jobs->front().name == "old");
    CHECK(jobs->front().submit_token.empty());
}

TEST_CASE("the submit token is stored, and set_remote_id says whether the job was still active") {
    TempDir dir;
    auto store = open_ok(dir.file("jobs.db"));
    auto job = sample_job("tok");
    job.submit_token = "abcde12345";
    const auto id = insert_ok(*store, job);
    auto got = store->get(id);
    REQUIRE(got);
    REQUIRE(*got);
    CHECK((*got)->submit_token == "abcde12345");
    auto active = store->set_remote_id(id, "41");
    REQUIRE(active);
    CHECK(*active);
    REQUIRE(store->update(id, JobUpdate{JobState::cancelled, "cancelled by the user", std::nullopt, std::nullopt, 5}, 5));
    // Cancelled while a submit was under way: the id is kept all the same (the caller cancels it remotely).
    auto late = store->set_remote_id(id, "42");
    REQUIRE(late);
    CHECK_FALSE(*late);
    CHECK((*store->get(id))->remote_id == "42");
    auto missing = store->set_remote_id(9999, "1");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().kind == ErrorKind::not_found);
}

TEST_CASE("a sweep's elements are stored with the row, and a refresh that reports them replaces them") {
    TempDir dir;
    const auto path = dir.file("jobs.db");
    auto store = open_ok(path);
    auto job = sample_job("sweep");
    job.elements = "P,P,P";
    const auto id = insert_ok(*store, job);
    CHECK(get_ok(*store, id).elements == "P,P,P");
    JobUpdate running{JobState::running, "3 elements: 1 SUCCEEDED, 2 RUNNING", std::nullopt, 100,
                      std::nullopt};
    running.elements = "S0,R,R";
    REQUIRE(store->update_many({{id, running}}, 101));
    CHECK(get_ok(*store, id).elements == "S0,R,R");
    // Moments later the same state and reason but an element moved on: written, not taken as a repeat.
    running.elements = "S0,S0,R";
    REQUIRE(store->update_many({{id, running}}, 102));
    CHECK(get_ok(*store, id).elements == "S0,S0,R");
    // An update that says nothing of elements leaves them.
    JobUpdate plain{JobState::running, "3 elements: 1 SUCCEEDED, 2 RUNNING", std::nullopt, 100, std::nullopt};
    REQUIRE(store->update_many({{id, plain}}, 110));
    CHECK(get_ok(*store, id).elements == "S0,S0,R");
    // A schema 7 file gains the column.
    store.reset();
    REQUIRE(raw_exec(path, "ALTER TABLE jobs DROP COLUMN elements; UPDATE schema_version SET version = 7") ==
            SQLITE_OK);
    store = open_ok(path);
    CHECK(raw_int(path, "SELECT version FROM schema_version") == k_schema_version);
    CHECK(get_ok(*store, id).elements.empty());
}
