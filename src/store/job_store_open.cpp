// Opening the store: connection settings, the schema version check, and migrations. Kept apart from the
// record operations because it is where concurrent tandem processes race (many opening a new file at
// once), and every step here is ordered for that.

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <thread>
#include <unistd.h>

#include <fmt/core.h>
#include <sys/stat.h>

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
    )sql",
              "parent_id"},
    // The token a launch hands its submit: finds the job again when the launch was killed before it stored
    // the remote id.
    Migration{4, R"sql(
        ALTER TABLE jobs ADD COLUMN submit_token TEXT NOT NULL DEFAULT '';
    )sql",
              "submit_token"},
    // Services (`tandem serve`): where each one runs, and the spec it was last given.
    Migration{5, R"sql(
        CREATE TABLE IF NOT EXISTS services(
            name TEXT PRIMARY KEY,
            cluster TEXT NOT NULL,
            backend TEXT NOT NULL,
            namespace TEXT NOT NULL DEFAULT '',
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            version INTEGER NOT NULL DEFAULT 1,
            spec_json TEXT NOT NULL);
    )sql"},
    // Discovery (issue 31) looks jobs up by their submit token.
    Migration{6, R"sql(
        CREATE INDEX IF NOT EXISTS jobs_submit_token ON jobs(submit_token);
    )sql"},
    // Recovery (issue 32): how the job recovered so far, as its cluster records it (core/job_recovery.hpp).
    Migration{7, R"sql(
        ALTER TABLE jobs ADD COLUMN recoveries TEXT NOT NULL DEFAULT '';
    )sql",
              "recoveries"},
    // Sweeps (issue 33): each element's state and exit code, compactly (core/sweep.hpp: "S0,R,F3,P").
    Migration{8, R"sql(
        ALTER TABLE jobs ADD COLUMN elements TEXT NOT NULL DEFAULT '';
    )sql",
              "elements"},
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

// The hint for a file tandem refuses before writing anything to it.
constexpr const char* k_left_untouched =
    "the file was left untouched; move it aside, or set TANDEM_HOME to another folder";

// A line of text from the file itself (a table's name), kept on one line and short.
std::string quoted_names(std::string names) {
    for (char& c : names) {
        if (static_cast<unsigned char>(c) < 0x20) {
            c = ' ';
        }
    }
    return names.size() > 120 ? names.substr(0, 117) + "..." : names;
}

// A database without tandem's schema_version is taken for a new (or older, unversioned) store only when
// every table in it is one tandem makes, with tandem's layout: another program's database must not get
// tandem's tables (or a column) added to it, nor its journal mode switched.
Status refuse_foreign(sqlite3* db, const std::string& path) {
    sqlite3_stmt* raw = nullptr;
    const char* others = "SELECT count(*), group_concat(name, ', ') FROM (SELECT name FROM sqlite_master "
                         "WHERE type IN ('table', 'view') AND name NOT IN ('jobs', 'job_attempts', "
                         "'services', 'schema_version', 'sqlite_sequence') ORDER BY name)";
    if (sqlite3_prepare_v2(db, others, -1, &raw, nullptr) != SQLITE_OK) {
        sqlite3_finalize(raw);
        return fail(ErrorKind::internal,
                    fmt::format("job store {}: reading its tables: {}", path, sqlite3_errmsg(db)),
                    sqlite_hint(sqlite3_errcode(db)));
    }
    Stmt tables(raw);
    if (tables.step() == SQLITE_ROW && tables.int64_at(0) > 0) {
        return fail(
            ErrorKind::config,
            fmt::format("job store {} is not a tandem job store: it holds {} table(s) tandem does not "
                        "know ({})",
                        path, tables.int64_at(0), quoted_names(tables.text_at(1))),
            k_left_untouched);
    }
    // A jobs table must have (at least) the columns of tandem's first schema, and a services table those
    // of the schema that added it.
    const char* layout =
        "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobs'), "
        "(SELECT count(*) FROM pragma_table_info('jobs') WHERE name IN ('id', 'name', "
        "'cluster', 'backend', 'remote_id', 'state', 'submitted_at', 'updated_at', "
        "'spec_json', 'placement_json')), "
        "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'services'), "
        "(SELECT count(*) FROM pragma_table_info('services') WHERE name IN ('name', 'cluster', "
        "'backend', 'namespace', 'created_at', 'updated_at', 'version', 'spec_json'))";
    if (sqlite3_prepare_v2(db, layout, -1, &raw, nullptr) != SQLITE_OK) {
        sqlite3_finalize(raw);
        return fail(ErrorKind::internal,
                    fmt::format("job store {}: reading its tables: {}", path, sqlite3_errmsg(db)),
                    sqlite_hint(sqlite3_errcode(db)));
    }
    Stmt known(raw);
    if (known.step() != SQLITE_ROW) {
        return {};
    }
    if (known.int64_at(0) == 1 && known.int64_at(1) != 10) {
        return fail(
            ErrorKind::config,
            fmt::format("job store {} is not a tandem job store: its jobs table has another layout", path),
            k_left_untouched);
    }
    if (known.int64_at(2) == 1 && known.int64_at(3) != 8) {
        return fail(
            ErrorKind::config,
            fmt::format("job store {} is not a tandem job store: its services table has another layout",
                        path),
            k_left_untouched);
    }
    return {};
}

// A new store is made whole under a temporary name and then linked into place, so `path` never exists
// half-made: a tandem opening it at the same moment finds no file or the whole schema, and an empty
// jobs.db can only be damage (a truncated store), which open() refuses. `make` owns `db` and fills it.
// A filesystem without hard links gets the old way: SQLite creates `path` and the schema is added there.
Status create_whole(const std::string& path, const std::function<Status(sqlite3*)>& make) {
    static std::atomic<unsigned> s_counter{0};
    const std::string temp = fmt::format("{}.new-{}-{}", path, ::getpid(), s_counter++);
    ::unlink(temp.c_str()); // left by a killed process that had our pid
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(temp.c_str(), &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close_v2(db);
        ::unlink(temp.c_str());
        return fail(ErrorKind::internal, fmt::format("cannot open job store {}: {}", path, message),
                    sqlite_hint(rc));
    }
    auto made = make(db);
    if (made && ::link(temp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
        // No hard links on this filesystem: open() goes on to create `path` the old way. (EEXIST: another
        // tandem linked its store first, which is as good as ours.)
    }
    // `make` has closed it; a failed one may leave its journal, WAL or -shm behind as well.
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) {
        ::unlink((temp + suffix).c_str());
    }
    return made;
}

} // namespace

JobStore::JobStore(sqlite3* db, std::string path) : m_db(db), m_path(std::move(path)) {}

// close_v2 rather than close: it cannot fail with SQLITE_BUSY over a statement left behind.
JobStore::~JobStore() {
    sqlite3_close_v2(m_db);
}

Result<std::unique_ptr<JobStore>> JobStore::open(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISREG(st.st_mode) && st.st_size == 0) {
            return fail(
                ErrorKind::internal,
                fmt::format("job store {} is empty (0 bytes): it was truncated, or is not a job store", path),
                "move it aside and tandem will start a new one; the file was left untouched");
        }
    } else if (errno == ENOENT) {
        auto made = create_whole(path, [&path](sqlite3* fresh) -> Status {
            JobStore store(fresh, path); // closes it, which removes its WAL after the switch below
            if (auto ok = store.exec("PRAGMA busy_timeout=10000", "setting busy timeout"); !ok) {
                return ok;
            }
            if (auto ok = store.migrate(); !ok) {
                return ok;
            }
            return store.exec("PRAGMA journal_mode=WAL", "switching to WAL mode");
        });
        if (!made) {
            Error error = std::move(made.error());
            if (error.kind == ErrorKind::internal && error.message.rfind("cannot open ", 0) != 0) {
                error.message = "cannot open " + error.message;
            }
            return tl::unexpected(std::move(error));
        }
    }
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
        const int failed = sqlite3_extended_errcode(db) & 0xff;
        const bool read_only = sqlite3_db_readonly(db, "main") == 1;
        if (read_only && (failed == SQLITE_CANTOPEN || failed == SQLITE_READONLY) &&
            ::access((path + "-shm").c_str(), F_OK) != 0) {
            // SQLite opened it read-only (a read-only mount, a file we may not write), and it cannot read a
            // WAL database without the -shm file, which it may not create here.
            error =
                Error{ErrorKind::internal,
                      fmt::format("cannot open job store {}: it is read-only here, and SQLite cannot read "
                                  "it without creating {}-shm",
                                  path, path),
                      "make its folder writable (a read-only copy needs its -shm and -wal files beside it)"};
        } else if (sqlite3_system_errno(db) == ENOSPC && failed != SQLITE_FULL) {
            // Its -shm could not be made: SQLite says "disk I/O error" for what is a full disk.
            error.message = fmt::format("cannot open {}: the disk is full", error.message);
            error.hint = sqlite_hint(SQLITE_FULL);
        } else if (read_only && error.kind == ErrorKind::internal) {
            error.message = fmt::format("cannot open {} (it is read-only here)", error.message);
        } else if (error.kind == ErrorKind::internal) {
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
    if (*version == 0) {
        if (auto ok = refuse_foreign(m_db, m_path); !ok) {
            return ok;
        }
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

// 0 for a database without a version yet (new, or created by a crashed first open). A version newer than
// this tandem's is refused: such a database must be left exactly as it is.
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
    const int version = static_cast<int>(query->int64_at(0));
    if (version > k_schema_version) {
        return newer_schema(m_path, version);
    }
    return version;
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
    // A newer tandem may have migrated between our first look and taking the lock (stored_version refuses
    // it); the rollback on return leaves its file as it was.
    auto version = stored_version();
    if (!version) {
        return tl::unexpected(version.error());
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
