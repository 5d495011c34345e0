// The job store under faults, through the real binary and the local backend: the state folder on a full
// disk or read-only (a small tmpfs; the tests run as root, and chmod does not stop root), a damaged or
// foreign jobs.db, and a launch killed inside its write transaction (TANDEM_FAULT=store.write). Every
// failure must be one `tandem: error:` line (plus an optional hint) naming the file, and the jobs already
// recorded must survive, byte for byte where tandem must not write.

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include "run_tandem.hpp"

using namespace tandem_test;
namespace fs = std::filesystem;

namespace {

// A tmpfs of `size` mounted over `dir` for one test, unmounted at the end. No skipping: a machine where
// this cannot mount fails the test and says why.
class Tmpfs {
public:
    Tmpfs(std::string dir, const std::string& size) : m_dir(std::move(dir)) {
        fs::create_directories(m_dir);
        const std::string options = "size=" + size + ",mode=0755";
        if (::mount("tmpfs", m_dir.c_str(), "tmpfs", 0, options.c_str()) != 0) {
            FAIL("cannot mount a tmpfs on " << m_dir << ": " << std::strerror(errno)
                                            << " (these scenarios need root with CAP_SYS_ADMIN)");
        }
    }
    ~Tmpfs() { ::umount2(m_dir.c_str(), MNT_DETACH); }
    Tmpfs(const Tmpfs&) = delete;
    Tmpfs& operator=(const Tmpfs&) = delete;

    // Remounts read-only or read-write. A job's wrapper that has just ended may still hold a file open
    // for writing for a moment (EBUSY), so this retries briefly.
    void remount(bool read_only) const {
        const unsigned long flags = read_only ? MS_REMOUNT | MS_RDONLY : MS_REMOUNT;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        int rc = -1;
        while ((rc = ::mount(nullptr, m_dir.c_str(), nullptr, flags, nullptr)) != 0 && errno == EBUSY &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(50ms);
        }
        INFO("remount " << m_dir << (read_only ? " read-only: " : " read-write: ") << std::strerror(errno));
        REQUIRE(rc == 0);
    }

private:
    std::string m_dir;
};

// Writes `path` until the filesystem has no byte left.
void fill_up(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    const std::string chunk(64 * 1024, 'f');
    for (std::size_t size : {chunk.size(), std::size_t{4096}, std::size_t{1}}) {
        while (::write(fd, chunk.data(), size) > 0) {
        }
    }
    const int err = errno;
    ::close(fd);
    INFO(std::strerror(err));
    REQUIRE(err == ENOSPC);
    struct statvfs st {};
    REQUIRE(::statvfs(path.c_str(), &st) == 0);
    REQUIRE(st.f_bavail == 0);
}

// Raw SQLite access to look at the store behind tandem's back. The connection does not checkpoint when it
// closes (as tandem's), so looking changes no file.
class RawDb {
public:
    explicit RawDb(const std::string& path) {
        const int rc = sqlite3_open_v2(path.c_str(), &m_db, SQLITE_OPEN_READWRITE, nullptr);
        INFO(path << ": " << sqlite3_errstr(rc));
        REQUIRE(rc == SQLITE_OK);
        sqlite3_db_config(m_db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    }
    ~RawDb() { sqlite3_close_v2(m_db); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    // The query's rows, each row's columns joined by '|'.
    std::vector<std::string> rows(const std::string& sql) const {
        std::vector<std::string> out;
        char* message = nullptr;
        const int rc = sqlite3_exec(
            m_db, sql.c_str(),
            [](void* sink, int n, char** values, char**) {
                std::string row;
                for (int i = 0; i < n; ++i) {
                    row += (i > 0 ? "|" : "") + std::string(values[i] != nullptr ? values[i] : "NULL");
                }
                static_cast<std::vector<std::string>*>(sink)->push_back(row);
                return 0;
            },
            &out, &message);
        INFO(sql << ": " << (message != nullptr ? message : ""));
        sqlite3_free(message);
        REQUIRE(rc == SQLITE_OK);
        return out;
    }

private:
    sqlite3* m_db = nullptr;
};

using Rows = std::vector<std::string>;

// The store is sound and holds exactly these job ids.
void check_store(const std::string& db_path, const Rows& ids) {
    RawDb db(db_path);
    CHECK(db.rows("PRAGMA integrity_check") == Rows{"ok"});
    CHECK(db.rows("SELECT id FROM jobs ORDER BY id") == ids);
}

int launch_detached(const TempHome& t, const std::string& task) {
    auto r = t.tandem({"launch", "--detach", task});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return std::stoi(r.out);
}

// Two finished jobs, 1 and 2, in the TempHome's store.
void record_two_jobs(const TempHome& t, const std::string& task) {
    REQUIRE(launch_detached(t, task) == 1);
    REQUIRE(launch_detached(t, task) == 2);
    for (int id : {1, 2}) {
        REQUIRE(t.wait_for_terminal(id)["state"] == "SUCCEEDED");
    }
}

std::vector<int> listed_ids(const TempHome& t) {
    std::vector<int> ids;
    for (const auto& job : t.jobs_json()) {
        ids.push_back(job["id"].get<int>());
    }
    return ids;
}

// A failed command that said so properly: not killed, not "internal error", and stderr is exactly one
// `tandem: error:` line naming `file` and containing `says`, then at most a hint.
void check_one_line_error(const RunResult& r, const std::string& file, const std::string& says) {
    INFO(r);
    CHECK(r.exited());
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    const auto lines = split_lines(r.err);
    REQUIRE(!lines.empty());
    CHECK(lines.size() <= 2);
    CHECK(lines[0].rfind("tandem: error: ", 0) == 0);
    CHECK(contains(lines[0], file));
    CHECK(contains(lines[0], says));
    CHECK_FALSE(contains(r.err, "internal error"));
    if (lines.size() == 2) {
        CHECK(lines[1].rfind("hint: ", 0) == 0);
    }
}

std::uint64_t fnv1a(const std::string& bytes) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : bytes) {
        h = (h ^ c) * 1099511628211ULL;
    }
    return h;
}

std::string pseudo_random_bytes(std::size_t n) {
    std::string out(n, '\0');
    std::uint32_t x = 2463534242U;
    for (auto& c : out) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c = static_cast<char>(x & 0xff);
    }
    return out;
}

bool has_temp_store(const std::string& state_dir) {
    for (const auto& f : list_files(state_dir)) {
        if (contains(f, "jobs.db.new-")) {
            return true;
        }
    }
    return false;
}

const char* const k_task = "name: quick\nrun: echo hi\n";

} // namespace

TEST_CASE("a full disk: launch fails with one line naming the store, and the recorded jobs stay",
          "[store][faults]") {
    TempHome t;
    Tmpfs disk(t.state_dir(), "512k");
    const auto task = t.write("quick.yaml", k_task);
    const std::string db_path = t.state_dir() + "/jobs.db";
    record_two_jobs(t, task);

    // The next commit must grow the WAL, and there is no byte left for it.
    fill_up(t.state_dir() + "/filler");
    auto r = t.tandem({"launch", "--detach", task});
    check_one_line_error(r, db_path, "disk is full");

    // Reading needs no space: the jobs recorded before are all listed, on the full disk and after.
    CHECK(listed_ids(t) == std::vector<int>{1, 2});
    auto plain = t.tandem({"status", "--all"});
    INFO(plain);
    CHECK(plain.exit_code == 0);
    fs::remove(t.state_dir() + "/filler");
    CHECK(listed_ids(t) == std::vector<int>{1, 2});
    check_store(db_path, {"1", "2"});

    // Nothing half-written stands in the way of the next launch.
    CHECK(launch_detached(t, task) == 3);
    CHECK(t.wait_for_terminal(3)["state"] == "SUCCEEDED");
    check_store(db_path, {"1", "2", "3"});
}

TEST_CASE("a full disk before the store or its -shm exists: one line naming the store, nothing half-made",
          "[store][faults]") {
    TempHome t;
    Tmpfs disk(t.state_dir(), "1m");
    const auto task = t.write("quick.yaml", k_task);
    const std::string db_path = t.state_dir() + "/jobs.db";
    fill_up(t.state_dir() + "/filler");
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status"}, {"launch", "--detach", task}}) {
        INFO(args[0]);
        check_one_line_error(t.tandem(args), db_path, "disk is full");
        CHECK_FALSE(file_exists(db_path));
        CHECK_FALSE(has_temp_store(t.state_dir()));
    }
    fs::remove(t.state_dir() + "/filler");
    CHECK(launch_detached(t, task) == 1);
    CHECK(t.wait_for_terminal(1)["state"] == "SUCCEEDED");

    // Without its -shm (32 KB that SQLite must allocate before it reads anything), even reading needs space.
    fs::remove(db_path + "-shm");
    fill_up(t.state_dir() + "/filler");
    check_one_line_error(t.tandem({"status"}), db_path, "disk is full");
    fs::remove(t.state_dir() + "/filler");
    CHECK(listed_ids(t) == std::vector<int>{1});
    check_store(db_path, {"1"});
}

TEST_CASE("a read-only state folder: status still lists the jobs, launch fails with one line",
          "[store][faults]") {
    TempHome t;
    Tmpfs disk(t.state_dir(), "1m");
    const auto task = t.write("quick.yaml", k_task);
    const std::string db_path = t.state_dir() + "/jobs.db";
    record_two_jobs(t, task);
    REQUIRE(file_exists(db_path + "-shm")); // tandem keeps its WAL and -shm between commands
    const auto db_before = read_file(db_path);
    const auto wal_before = read_file(db_path + "-wal");

    disk.remount(true);
    // SQLite opens the store read-only and reads it through the existing -shm.
    CHECK(listed_ids(t) == std::vector<int>{1, 2});
    auto logs = t.tandem({"logs", "1"});
    INFO(logs);
    CHECK(logs.exit_code == 0);
    CHECK(logs.out == "hi\n");
    auto cancel = t.tandem({"cancel", "--all"}); // nothing active: nothing to write
    INFO(cancel);
    CHECK(cancel.exit_code == 0);
    CHECK(cancel.err_lines_starting("tandem: error:").empty());
    // The launch stops at its first write in the state folder (its launch lock, then the store).
    auto launch = t.tandem({"launch", "--detach", task});
    check_one_line_error(launch, t.state_dir() + "/", "ead-only");

    // Without its -shm (a copy, or one removed) SQLite cannot read a WAL store it may not write: one line
    // that says so, not "unable to open database file".
    disk.remount(false);
    fs::remove(db_path + "-shm");
    disk.remount(true);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status"}, {"status", "--all", "--json"}, {"launch", "--detach", task}}) {
        INFO(args[0]);
        check_one_line_error(t.tandem(args), db_path, "read-only");
    }

    disk.remount(false);
    CHECK(read_file(db_path) == db_before);
    CHECK(read_file(db_path + "-wal") == wal_before);
    check_store(db_path, {"1", "2"});
    CHECK(listed_ids(t) == std::vector<int>{1, 2});
    CHECK(launch_detached(t, task) == 3);
}

TEST_CASE("a damaged, empty or foreign jobs.db is one line naming it and is never written",
          "[store][faults]") {
    // A real store to damage: two jobs, checkpointed so that the file holds everything.
    std::string good;
    {
        TempHome source;
        record_two_jobs(source, source.write("quick.yaml", k_task));
        const std::string db_path = source.state_dir() + "/jobs.db";
        {
            RawDb db(db_path);
            CHECK(db.rows("PRAGMA wal_checkpoint(TRUNCATE)").size() == 1);
        }
        good = read_file(db_path).value();
        REQUIRE(good.size() >= 4 * 4096);
    }
    // Another program's database, made as SQLite makes one by default (rollback journal), so that any write
    // by tandem, even its switch to WAL, would show in the bytes.
    auto foreign = [](const std::string& sql) {
        TempHome scratch;
        const std::string path = scratch.path("other.db");
        {
            sqlite3* db = nullptr;
            REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
            REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
            REQUIRE(sqlite3_close(db) == SQLITE_OK);
        }
        return read_file(path).value();
    };
    struct Case {
        const char* what;
        std::string bytes;
        const char* says;
    };
    const std::vector<Case> cases{
        {"garbage pages after the first", good.substr(0, 4096) + pseudo_random_bytes(good.size() - 4096),
         "malformed"},
        {"garbage after the 100-byte header", good.substr(0, 100) + pseudo_random_bytes(good.size() - 100),
         "malformed"},
        {"truncated mid-page", good.substr(0, good.size() / 2 + 1000), "malformed"},
        {"truncated inside the header", good.substr(0, 50), "malformed"},
        {"zero-length", "", "empty (0 bytes)"},
        {"another program's database",
         foreign("CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT);"
                 "INSERT INTO users VALUES(1, 'a@example.com');"),
         "not a tandem job store"},
        {"a jobs table of another layout",
         foreign("CREATE TABLE jobs(id INTEGER PRIMARY KEY, title TEXT, salary INTEGER);"
                 "INSERT INTO jobs VALUES(1, 'cook', 3);"),
         "not a tandem job store"},
    };
    for (const auto& c : cases) {
        INFO(c.what);
        TempHome t;
        const auto task = t.write("quick.yaml", k_task);
        const auto db_path = t.write("tandem/state/jobs.db", c.bytes);
        const auto hash_before = fnv1a(c.bytes);
        for (const std::vector<std::string>& args : {std::vector<std::string>{"status"},
                                                     {"status", "--all", "--json"},
                                                     {"launch", "--detach", task},
                                                     {"cancel", "--all"},
                                                     {"cancel", "1"},
                                                     {"logs", "1"}}) {
            INFO(args[0] << (args.size() > 1 ? " " + args[1] : ""));
            check_one_line_error(t.tandem(args), db_path, c.says);
            const auto now = read_file(db_path).value_or("(gone)");
            INFO("hash " << fnv1a(now) << ", was " << hash_before);
            REQUIRE(now == c.bytes);
        }
        CHECK_FALSE(has_temp_store(t.state_dir()));
        CHECK_FALSE(file_exists(t.job_dir(1))); // nothing was submitted
    }
}

TEST_CASE("a launch killed inside its store write leaves the store whole and the next launch works",
          "[store][faults]") {
    TempHome t;
    const auto task = t.write("quick.yaml", k_task);
    const std::string db_path = t.state_dir() + "/jobs.db";
    record_two_jobs(t, task);
    for (int k = 0; k < 3; ++k) {
        INFO("killed launch " << k);
        auto r = t.tandem({"launch", "--detach", task}, with_env({{"TANDEM_FAULT", "store.write"}}));
        INFO(r);
        REQUIRE(r.signal == SIGKILL); // died inside the transaction, as `kill -9` or a crash would
        CHECK(r.out.empty());
        check_store(db_path, {"1", "2"}); // no half-written row
        CHECK(listed_ids(t) == std::vector<int>{1, 2});
    }
    CHECK_FALSE(file_exists(t.job_dir(3))); // nothing was submitted for the lost row
    CHECK(launch_detached(t, task) == 3);
    CHECK(t.wait_for_terminal(3)["state"] == "SUCCEEDED");
    check_store(db_path, {"1", "2", "3"});
}
