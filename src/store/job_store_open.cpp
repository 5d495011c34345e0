// Opening the store: connection settings, the schema version check, and migrations. Kept apart from the
// record operations because it is where concurrent tandem processes race (many opening a new file at
// once), and every step here is ordered for that.

#include <array>
#include <chrono>
#include <thread>

#include <fmt/core.h>

#include "store/job_store.hpp"
#include "store/sqlite_stmt.hpp"

namespace tandem::store {

namespace {

// Schema steps in order; step N brings a database from version N-1 to N. Steps only ever add (tables,
// columns with defaults, indexes) so an older tandem's rows survive every upgrade. IF NOT EXISTS lets step 1
// run over a file that has its tables but an empty schema_version.
struct Migration {
    int version;
    const char* sql;
    // A step that adds columns cannot say IF NOT EXISTS: it is skipped when the jobs table already has
    // this column (a file with its tables but an empty schema_version).
    const char* adds_column = nullptr;
};

constexpr std::array k_migrations{
    Migration{1, R"sql(
        CREATE TABLE IF NOT EXISTS jobs(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            cluster TEXT NOT NULL,
            backend TEXT NOT NULL,
            remote_id TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            exit_code INTEGER,
            submitted_at INTEGER NOT NULL,
            started_at INTEGER,
            ended_at INTEGER,
            updated_at INTEGER NOT NULL,
            spec_json TEXT NOT NULL,
            placement_json TEXT NOT NULL,
            gpus TEXT NOT NULL DEFAULT '',
            num_nodes INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
        CREATE INDEX IF NOT EXISTS jobs_ended_at ON jobs(ended_at);
    )sql"},
    Migration{2, R"sql(
        CREATE TABLE IF NOT EXISTS job_attempts(
            job_id INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            cluster TEXT NOT NULL,
            backend TEXT NOT NULL,
            pool TEXT NOT NULL DEFAULT '',
            remote_id TEXT NOT NULL DEFAULT '',
            submitted_at INTEGER NOT NULL,
            ended_at INTEGER NOT NULL,
            outcome TEXT NOT NULL DEFAULT '',
            PRIMARY KEY(job_id, attempt));
    )sql"},
    // Pipelines and job groups: a member row points at its group's row.
    Migration{3, R"sql(
        ALTER TABLE jobs ADD COLUMN parent_id INTEGER;
        ALTER TABLE jobs ADD COLUMN member TEXT NOT NULL DEFAULT '';
        CREATE INDEX IF NOT EXISTS jobs_parent ON jobs(parent_id);
    )sql", "parent_id"},
};
static_assert(k_migrations.back().version == k_schema_version, "every schema version needs its migration");

// The same ten seconds the busy handler waits, for the one step the busy handler does not cover.
constexpr auto k_wal_switch_patience = std::chrono::seconds(10);

tl::unexpected<Error> newer_schema(const std::string& path, int version) {
    return fail(ErrorKind::config,
                fmt::format("job store {} has schema version {}, newer than this tandem understands ({})",
                            path, version, k_schema_version),
                "upgrade tandem; the file was left untouched");
}

} // namespace

JobStore::JobStore(sqlite3* db, std::string path) : m_db(db), m_path(std::move(path)) {}

// close_v2 rather than close: it cannot fail with SQLITE_BUSY over a statement left behind.
JobStore::~JobStore() {
    sqlite3_close_v2(m_db);
}

Result<std::unique_ptr<JobStore>> JobStore::open(const std::string& path) {
    sqlite3* db = nullptr;
    // NOMUTEX: a JobStore is used by one thread at a time (threads open their own), so SQLite's per-call
    // locking is pure overhead, and it was a tenth of the time of a large list().
    int rc = sqlite3_open_v2(path.c_str(), &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        return fail(ErrorKind::internal, fmt::format("cannot open job store {}: {}", path, message),
                    sqlite_hint(rc));
    }
    // Every CLI invocation opens and closes the store. By default the last connection to close checkpoints
    // the WAL into the database and deletes it, and the next writer creates it again: four fsyncs per
    // `status` (a third of its time on a busy disk). The WAL is kept instead and checkpointed by whichever
    // commit grows it past wal_autocheckpoint. Crash safety is unchanged: committed data is in
    // the WAL, which the next opener reads. See configure() for the WAL's size.
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    std::unique_ptr<JobStore> store(new JobStore(db, path));
    if (auto ok = store->configure(); !ok) {
        Error error = std::move(ok.error());
        if (error.kind == ErrorKind::internal) {
            error.message = "cannot open " + error.message;
        }
        return tl::unexpected(std::move(error));
    }
    return store;
}

Status JobStore::configure() {
    // The busy timeout goes first so that every later step waits out concurrent openers instead of failing.
    if (auto ok = exec("PRAGMA busy_timeout=10000", "setting busy timeout"); !ok) {
        return ok;
    }
    // Check the version before anything writes: switching to WAL rewrites the header, and a database from a
    // newer tandem must be left exactly as it was.
    auto version = stored_version();
    if (!version) {
        return tl::unexpected(version.error());
    }
    if (*version > k_schema_version) {
        return newer_schema(m_path, *version);
    }
    if (auto ok = set_wal_mode(); !ok) {
        return ok;
    }
    // NORMAL in WAL mode cannot corrupt the file; a power cut may lose the last commits, which is worth
    // an fsync saved on every status refresh.
    // The WAL outlives each process (NO_CKPT_ON_CLOSE in open()), and every process, being the first
    // connection, rebuilds its index by reading it whole: 256 pages (1 MB) bounds that read to a fraction
    // of a millisecond, and the checkpoint that keeps it there comes every hundred or so commits.
    for (const char* pragma :
         {"PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON", "PRAGMA wal_autocheckpoint=256"}) {
        if (auto ok = exec(pragma, "configuring"); !ok) {
            return ok;
        }
    }
    // Every CLI invocation opens the store; only take the write lock when there is something to migrate.
    if (*version < k_schema_version) {
        return migrate();
    }
    return {};
}

// 0 for a database without a version yet (new, or created by a crashed first open).
Result<int> JobStore::stored_version() {
    auto has_table =
        prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_version'");
    if (!has_table) {
        return tl::unexpected(has_table.error());
    }
    if (has_table->step() != SQLITE_ROW) {
        return tl::unexpected(sqlite_error("reading schema version"));
    }
    if (has_table->int64_at(0) == 0) {
        return 0;
    }
    auto query = prepare("SELECT coalesce(max(version), 0) FROM schema_version");
    if (!query) {
        return tl::unexpected(query.error());
    }
    if (query->step() != SQLITE_ROW) {
        return tl::unexpected(sqlite_error("reading schema version"));
    }
    return static_cast<int>(query->int64_at(0));
}

// Changing the journal mode needs an exclusive lock, and SQLite reports SQLITE_BUSY for it without always
// consulting the busy handler; when many processes open a new file at once we wait here ourselves.
Status JobStore::set_wal_mode() {
    auto pragma = prepare("PRAGMA journal_mode=WAL");
    if (!pragma) {
        return tl::unexpected(pragma.error());
    }
    const auto deadline = std::chrono::steady_clock::now() + k_wal_switch_patience;
    for (;;) {
        int rc = pragma->step();
        if (rc == SQLITE_ROW) {
            // A filesystem without shared memory keeps the old mode; the store still works, just with
            // readers and the writer blocking each other, so this is not an error.
            return {};
        }
        bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
        if (!busy || std::chrono::steady_clock::now() >= deadline) {
            return tl::unexpected(sqlite_error("switching to WAL mode"));
        }
        pragma->reset();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// Runs inside BEGIN IMMEDIATE: concurrent first opens serialise here, and each re-reads the version under
// the lock, so exactly one of them creates the schema and the others find it done.
Status JobStore::migrate() {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    if (auto ok =
            exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", "creating schema");
        !ok) {
        return ok;
    }
    auto version = stored_version();
    if (!version) {
        return tl::unexpected(version.error());
    }
    // A newer tandem may have migrated between our first look and taking the lock; the rollback on return
    // leaves its file as it was.
    if (*version > k_schema_version) {
        return newer_schema(m_path, *version);
    }
    if (*version == k_schema_version) {
        return {};
    }
    for (const Migration& step : k_migrations) {
        if (step.adds_column) {
            auto has = prepare("SELECT count(*) FROM pragma_table_info('jobs') WHERE name = ?1");
            if (!has) {
                return tl::unexpected(has.error());
            }
            has->bind(1, std::string_view(step.adds_column));
            if (has->step() == SQLITE_ROW && has->int64_at(0) > 0) {
                continue;
            }
        }
        if (step.version > *version) {
            if (auto ok = exec(step.sql, fmt::format("migrating to schema version {}", step.version)); !ok) {
                return ok;
            }
        }
    }
    // UPDATE first, INSERT only if there was no row: the table always ends with exactly one.
    for (const char* record : {"UPDATE schema_version SET version = ?1",
                               "INSERT INTO schema_version(version) SELECT ?1 WHERE changes() = 0"}) {
        auto stmt = prepare(record);
        if (!stmt) {
            return tl::unexpected(stmt.error());
        }
        stmt->bind(1, std::int64_t{k_schema_version});
        if (stmt->step() != SQLITE_DONE) {
            return tl::unexpected(sqlite_error("recording schema version"));
        }
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error("committing schema"));
    }
    return {};
}

} // namespace tandem::store
