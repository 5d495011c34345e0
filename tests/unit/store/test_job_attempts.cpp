// Failover records: a job moves to another placement, keeping its id, and its history is kept.

#include <catch2/catch.hpp>

#include "store/job_store.hpp"
#include "store_test_support.hpp"

using namespace tandem;
using namespace tandem::store;
using tandem::store::testing::sample_job;
using tandem::store::testing::TempDir;

namespace {

std::unique_ptr<JobStore> open_store(const std::string& path) {
    auto store = JobStore::open(path);
    REQUIRE(store);
    return std::move(*store);
}

Attempt left(const std::string& cluster, const std::string& remote_id, const std::string& outcome) {
    return Attempt{0, cluster, "slurm", "gpu", remote_id, 100, 200, outcome};
}

Move to_k8s() {
    return Move{"k8s/kind", "k8s", R"({"cluster":"k8s/kind"})", "A100:1", "moving from slurm/gpu", "tok0000002"};
}

} // namespace

TEST_CASE("move_job points the job at the next placement and records the one it left") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    JobRecord job = sample_job("train");
    auto id = store->insert(job);
    REQUIRE(id);
    REQUIRE(store->set_remote_id(*id, "41"));

    auto moved =
        store->move_job(*id, "41", left("slurm", "41", "pending 5m (Resources): cancelled"), to_k8s(), 300);
    REQUIRE(moved);
    CHECK(*moved);
    auto row = store->get(*id);
    REQUIRE(row);
    REQUIRE(*row);
    CHECK((*row)->id == *id);
    CHECK((*row)->cluster == "k8s/kind");
    CHECK((*row)->backend == "k8s");
    CHECK((*row)->remote_id.empty());
    CHECK((*row)->state == JobState::pending);
    CHECK((*row)->reason == "moving from slurm/gpu");
    CHECK((*row)->gpus == "A100:1");

    auto history = store->attempts(*id);
    REQUIRE(history);
    REQUIRE(history->size() == 1);
    CHECK(history->front().number == 1);
    CHECK(history->front().cluster == "slurm");
    CHECK(history->front().remote_id == "41");
    CHECK(history->front().outcome == "pending 5m (Resources): cancelled");

    SECTION("a second move is attempt 2") {
        REQUIRE(store->set_remote_id(*id, "ns/train-1"));
        auto again = store->move_job(*id, "ns/train-1", left("k8s/kind", "ns/train-1", "refused: quota"),
                                     Move{"local", "local", "{}", "", "moving from k8s/kind", "tok0000003"}, 400);
        REQUIRE(again);
        CHECK(*again);
        auto h = store->attempts(*id);
        REQUIRE(h);
        REQUIRE(h->size() == 2);
        CHECK((*h)[1].number == 2);
        CHECK((*h)[1].outcome == "refused: quota");
    }
    SECTION("a refresh of the old placement no longer lands on the moved job") {
        JobUpdate stale{JobState::cancelled, "", std::nullopt, std::nullopt, 250};
        auto applied = store->update_many({{*id, stale}}, 301, {"41"});
        REQUIRE(applied);
        CHECK_FALSE(applied->front());
        CHECK((*store->get(*id))->state == JobState::pending);
    }
}

TEST_CASE("move_job leaves a job the user cancelled, or that points elsewhere, alone") {
    TempDir dir;
    auto store = open_store(dir.file("jobs.db"));
    auto id = store->insert(sample_job("train"));
    REQUIRE(id);
    REQUIRE(store->set_remote_id(*id, "41"));

    SECTION("cancelled by the user") {
        REQUIRE(store->update(*id, JobUpdate{JobState::cancelled, "cancelled by user", {}, {}, 150}, 150));
        auto moved = store->move_job(*id, "41", left("slurm", "41", "x"), to_k8s(), 200);
        REQUIRE(moved);
        CHECK_FALSE(*moved);
        CHECK((*store->get(*id))->state == JobState::cancelled);
        CHECK(store->attempts(*id)->empty());
    }
    SECTION("cancelled by the failover itself, seen by a concurrent refresh: still moves") {
        REQUIRE(store->update(*id, JobUpdate{JobState::cancelled, "", {}, {}, 150}, 150));
        auto moved = store->move_job(*id, "41", left("slurm", "41", "x"), to_k8s(), 200);
        REQUIRE(moved);
        CHECK(*moved);
        CHECK((*store->get(*id))->state == JobState::pending);
    }
    SECTION("another remote id: someone else moved it") {
        auto moved = store->move_job(*id, "99", left("slurm", "99", "x"), to_k8s(), 200);
        REQUIRE(moved);
        CHECK_FALSE(*moved);
        CHECK((*store->get(*id))->cluster == sample_job("train").cluster);
    }
}
