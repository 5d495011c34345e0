// Many tandem processes at once on one job store, and a job store tandem must not touch.

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "run_tandem.hpp"

using namespace tandem_test;

TEST_CASE("twenty concurrent launches get twenty distinct ids and intact records", "[concurrency]") {
    TempHome t;
    const auto task = t.write("quick.yaml", "name: quick\nrun: echo \"hi-$TANDEM_JOB_ID\"\n");
    constexpr int k_launches = 20;
    std::vector<Child> children;
    children.reserve(k_launches);
    // Start them all before collecting any, so they race on a store that does not exist yet.
    for (int k = 0; k < k_launches; ++k) {
        children.push_back(t.start_tandem({"launch", "--detach", "-n", "job-" + std::to_string(k), task}));
    }
    std::map<int, std::string> name_of_id;
    for (int k = 0; k < k_launches; ++k) {
        auto r = children[static_cast<std::size_t>(k)].wait();
        INFO("launch " << k << "\n" << r);
        CHECK(r.exit_code == 0);
        if (r.exit_code != 0) {
            continue;
        }
        CHECK(r.out.size() >= 2);
        CHECK(r.out.back() == '\n');
        const int id = std::stoi(r.out);
        CHECK(name_of_id.count(id) == 0);
        name_of_id[id] = "job-" + std::to_string(k);
    }
    REQUIRE(name_of_id.size() == static_cast<std::size_t>(k_launches));
    CHECK(name_of_id.begin()->first == 1);
    CHECK(name_of_id.rbegin()->first == k_launches);

    for (int id = 1; id <= k_launches; ++id) {
        t.wait_for_terminal(id, 20s);
    }
    auto jobs = t.jobs_json();
    REQUIRE(jobs.size() == static_cast<std::size_t>(k_launches));
    std::set<std::string> names;
    for (const auto& j : jobs) {
        INFO(j.dump());
        const int id = j["id"].get<int>();
        CHECK(j["name"] == name_of_id[id]);
        CHECK(j["state"] == "SUCCEEDED");
        CHECK(j["exit_code"] == 0);
        CHECK_FALSE(j["remote_id"].get<std::string>().empty());
        names.insert(j["name"].get<std::string>());
        // Each job ran once, as itself.
        CHECK(read_file(t.job_dir(id) + "/output.log") ==
              std::optional<std::string>("hi-" + std::to_string(id) + "\n"));
    }
    CHECK(names.size() == static_cast<std::size_t>(k_launches));
}

TEST_CASE("a job store from a newer tandem is refused and left untouched", "[store]") {
    TempHome t;
    const std::string db_path = t.state_dir() + "/jobs.db";
    std::filesystem::create_directories(t.state_dir());
    {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
        char* message = nullptr;
        const int rc = sqlite3_exec(db,
                                    "CREATE TABLE schema_version(version INTEGER);"
                                    "INSERT INTO schema_version VALUES(99);"
                                    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, future_column TEXT);"
                                    "INSERT INTO jobs VALUES(1, 'from the future');",
                                    nullptr, nullptr, &message);
        INFO((message != nullptr ? message : ""));
        sqlite3_free(message);
        REQUIRE(rc == SQLITE_OK);
        REQUIRE(sqlite3_close(db) == SQLITE_OK);
    }
    const auto before = read_file(db_path);
    REQUIRE(before);
    const auto files_before = list_files(t.state_dir());

    const auto task = t.write("quick.yaml", "name: quick\nrun: echo hi\n");
    for (const std::vector<std::string>& args : {std::vector<std::string>{"status"},
                                                 {"status", "--all", "--json"},
                                                 {"launch", task},
                                                 {"cancel", "--all"},
                                                 {"logs", "1"}}) {
        auto r = t.tandem(args);
        INFO(args[0] << "\n" << r);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.rfind("tandem: error: ", 0) == 0);
        CHECK(contains(r.err, "schema version"));
        CHECK(contains(r.err, "99"));
    }
    CHECK(read_file(db_path) == before);
    CHECK(list_files(t.state_dir()) == files_before); // no -wal, -shm or job folder appeared
}

TEST_CASE("a job store that is not a database is an error and not a crash", "[store]") {
    TempHome t;
    const auto db_path = t.write("tandem/state/jobs.db", std::string(8192, 'x'));
    const auto before = read_file(db_path);
    auto r = t.tandem({"status"});
    INFO(r);
    CHECK(r.signal == 0);
    CHECK(r.exit_code != 0);
    CHECK(r.err.rfind("tandem: error: ", 0) == 0);
    CHECK(contains(r.err, "jobs.db"));
    CHECK(read_file(db_path) == before);
}
