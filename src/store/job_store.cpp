// Record operations on the job store. Each write is one short BEGIN IMMEDIATE transaction so concurrent
// tandem processes (a `launch` while a `status` refreshes) queue on the busy timeout instead of failing.
// Opening and migrations live in job_store_open.cpp.

#include "store/job_store.hpp"

#include <algorithm>
#include <cerrno>

#include <fmt/core.h>

#include "core/job_recovery.hpp"
#include "store/sqlite_stmt.hpp"

namespace tandem::store {

namespace {

// Must match is_terminal(); spelled out because it is part of the SQL text, not a bound value.
constexpr std::string_view k_active_sql = "state NOT IN ('SUCCEEDED','FAILED','CANCELLED')";

// Column order shared by get() and list(); read_row() depends on it.
constexpr std::string_view k_select_sql =
    "SELECT id, name, cluster, backend, remote_id, state, reason, exit_code, submitted_at, started_at, "
    "ended_at, updated_at, spec_json, placement_json, gpus, num_nodes, parent_id, member, submit_token, "
    "recoveries, "
    "elements FROM jobs";

// Fills `job` in place: list() reads thousands of rows, and building each one elsewhere then moving it
// showed up in profiles.
Status read_row(const Stmt& row, JobRecord& job, const std::string& path) {
    job.id = row.int64_at(0);
    job.name = row.text_at(1);
    job.cluster = row.text_at(2);
    job.backend = row.text_at(3);
    job.remote_id = row.text_at(4);
    std::string state = row.text_at(5);
    auto parsed = job_state_from_string(state);
    if (!parsed) {
        return fail(ErrorKind::internal,
                    fmt::format("job store {}: job {} has unrecognised state '{}'", path, job.id, state));
    }
    job.state = *parsed;
    job.reason = row.text_at(6);
    if (auto code = row.optional_int64_at(7)) {
        job.exit_code = static_cast<int>(*code);
    }
    job.submitted_at = row.int64_at(8);
    job.started_at = row.optional_int64_at(9);
    job.ended_at = row.optional_int64_at(10);
    job.updated_at = row.int64_at(11);
    job.spec_json = row.text_at(12);
    job.placement_json = row.text_at(13);
    job.gpus = row.text_at(14);
    job.num_nodes = static_cast<int>(row.int64_at(15));
    job.parent_id = row.optional_int64_at(16);
    job.member = row.text_at(17);
    job.submit_token = row.text_at(18);
    job.recoveries = row.text_at(19);
    job.elements = row.text_at(20);
    return {};
}

std::optional<std::int64_t> widen(std::optional<int> value) {
    if (value) {
        return *value;
    }
    return std::nullopt;
}

} // namespace

Result<std::int64_t> JobStore::insert(const JobRecord& job) {
    if (job.state == JobState::unknown) {
        return fail(ErrorKind::internal, fmt::format("job store {}: refusing to store job '{}' as UNKNOWN: "
                                                     "UNKNOWN is reported, never stored",
                                                     m_path, job.name));
    }
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto id = insert_row(job);
    if (!id) {
        return id;
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot insert job '{}'", job.name)));
    }
    return id;
}

Result<std::int64_t> JobStore::insert_row(const JobRecord& job) {
    auto stmt = prepare(
        "INSERT INTO jobs(name, cluster, backend, remote_id, state, reason, exit_code, "
        "submitted_at, started_at, ended_at, updated_at, spec_json, placement_json, gpus, "
        "num_nodes, parent_id, member, submit_token, recoveries, elements) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
        "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, job.name);
    stmt->bind(2, job.cluster);
    stmt->bind(3, job.backend);
    stmt->bind(4, job.remote_id);
    stmt->bind(5, to_string(job.state));
    stmt->bind(6, job.reason);
    stmt->bind(7, widen(job.exit_code));
    stmt->bind(8, job.submitted_at);
    stmt->bind(9, job.started_at);
    stmt->bind(10, job.ended_at);
    stmt->bind(11, job.updated_at);
    stmt->bind(12, job.spec_json);
    stmt->bind(13, job.placement_json);
    stmt->bind(14, job.gpus);
    stmt->bind(15, std::int64_t{job.num_nodes});
    stmt->bind(16, job.parent_id);
    stmt->bind(17, job.member);
    stmt->bind(18, job.submit_token);
    stmt->bind(19, job.recoveries);
    stmt->bind(20, job.elements);
    if (stmt->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot insert job '{}'", job.name)));
    }
    // Read before COMMIT: the rowid belongs to this connection, and nothing else writes on it meanwhile.
    return std::int64_t{sqlite3_last_insert_rowid(m_db)};
}

Result<bool> JobStore::set_remote_id(std::int64_t id, const std::string& remote_id) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    bool active = false;
    {
        auto state = prepare("SELECT state FROM jobs WHERE id = ?1");
        if (!state) {
            return tl::unexpected(state.error());
        }
        state->bind(1, id);
        if (state->step() != SQLITE_ROW) {
            return tl::unexpected(not_found(id).error());
        }
        const auto parsed = job_state_from_string(state->text_at(0));
        active = parsed && !is_terminal(*parsed);
    }
    auto stmt = prepare("UPDATE jobs SET remote_id = ?1 WHERE id = ?2");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, remote_id);
    stmt->bind(2, id);
    if (stmt->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot record remote id of job {}", id)));
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot record remote id of job {}", id)));
    }
    return active;
}

Status JobStore::set_placement_json(std::int64_t id, const std::string& placement_json) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto stmt = prepare("UPDATE jobs SET placement_json = ?1 WHERE id = ?2");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, placement_json);
    stmt->bind(2, id);
    if (stmt->step() != SQLITE_DONE || txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot record the placement of job {}", id)));
    }
    return {};
}

Status JobStore::update(std::int64_t id, const JobUpdate& update, std::int64_t now) {
    auto applied = update_many({{id, update}}, now);
    if (!applied) {
        return tl::unexpected(applied.error());
    }
    if (!applied->front()) {
        auto found = get(id); // unchanged because it has ended, is UNKNOWN, or does not exist
        if (!found) {
            return tl::unexpected(found.error());
        }
        return *found ? Status{} : not_found(id);
    }
    return {};
}

namespace {

// A refresh that only confirms what a row says (same state, reason, exit code, start and end) is not written
// when the row was confirmed less than this long ago. Writing every row of every refresh was most of what
// `status` spent in the store (a commit of ~20 pages for 100 jobs, and a checkpoint every few runs), and a
// state's age (`state_age_seconds`, "UNKNOWN (was RUNNING, 12s)") is shown in seconds anyway.
constexpr std::int64_t k_reconfirm_seconds = 5;

// `row` is (state, reason, exit_code, started_at, ended_at, updated_at, remote_id, recoveries, elements)
// of the job.
bool reconfirms(const Stmt& row, const JobUpdate& update, std::string_view expected_remote,
                std::int64_t now) {
    const auto state = job_state_from_string(row.text_at(0));
    if (!state || is_terminal(*state) || *state != update.state || row.text_at(1) != update.reason) {
        return false;
    }
    if (!expected_remote.empty() && row.text_at(6) != expected_remote) {
        return false;
    }
    if (update.recoveries && row.text_at(7) != merge_recoveries(row.text_at(7), *update.recoveries)) {
        return false;
    }
    if (update.elements && row.text_at(8) != *update.elements) {
        return false;
    }
    const auto exit_code = row.optional_int64_at(2);
    const auto started = row.optional_int64_at(3);
    const auto ended = row.optional_int64_at(4);
    // What the UPDATE below would leave (coalesce): unchanged means nothing new.
    const bool same_exit = !update.exit_code || exit_code == widen(update.exit_code);
    const bool same_start = started || !update.started_at;
    const bool same_end = !update.ended_at || ended == update.ended_at;
    const std::int64_t age = now - row.int64_at(5);
    return same_exit && same_start && same_end && age >= 0 && age < k_reconfirm_seconds;
}

} // namespace

Result<std::vector<bool>>
JobStore::update_many(const std::vector<std::pair<std::int64_t, JobUpdate>>& updates, std::int64_t now,
                      const std::vector<std::string>& remote_ids) {
    std::vector<bool> applied(updates.size(), false);
    const bool any = std::any_of(updates.begin(), updates.end(),
                                 [](const auto& u) { return u.second.state != JobState::unknown; });
    if (!any) {
        return applied; // UNKNOWN writes nothing: the last known state and its age stay
    }
    // One transaction for a whole refresh: a status over 100 jobs is one commit, not 100.
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    // started_at is the first time the job was seen running; later refreshes must not move it.
    // A terminal state is final: a refresh racing with a cancel (or another refresh) cannot rewrite it.
    auto stmt =
        prepare("UPDATE jobs SET state = ?1, reason = ?2, exit_code = coalesce(?3, exit_code), "
                "started_at = coalesce(started_at, ?4), ended_at = coalesce(?5, ended_at), "
                "updated_at = ?6, recoveries = coalesce(?9, recoveries), elements = coalesce(?10, elements) "
                "WHERE id = ?7 AND (?8 = '' OR "
                "remote_id = ?8) "
                "AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    auto current = prepare("SELECT state, reason, exit_code, started_at, ended_at, updated_at, remote_id, "
                           "recoveries, elements FROM jobs WHERE id = ?1");
    if (!current) {
        return tl::unexpected(current.error());
    }
    for (std::size_t i = 0; i < updates.size(); ++i) {
        const auto& [id, update] = updates[i];
        if (update.state == JobState::unknown) {
            continue;
        }
        const std::string_view expected_remote =
            i < remote_ids.size() ? std::string_view(remote_ids[i]) : std::string_view("");
        current->reset();
        current->bind(1, id);
        const bool found = current->step() == SQLITE_ROW;
        if (found && reconfirms(*current, update, expected_remote, now)) {
            applied[i] = true; // the row already says this, confirmed moments ago: no write
            continue;
        }
        // A cluster may forget recoveries the row holds (a pod gone after an eviction): keep the union.
        std::optional<std::string> recoveries = update.recoveries;
        if (recoveries && found) {
            recoveries = merge_recoveries(current->text_at(7), *recoveries);
        }
        stmt->reset();
        stmt->bind(1, to_string(update.state));
        stmt->bind(2, update.reason);
        stmt->bind(3, widen(update.exit_code));
        stmt->bind(4, update.started_at);
        stmt->bind(5, update.ended_at);
        stmt->bind(6, now);
        stmt->bind(7, id);
        // A null data pointer would bind NULL, and NULL = '' is never true.
        stmt->bind(8, expected_remote);
        if (recoveries) {
            stmt->bind(9, *recoveries);
        } else {
            stmt->bind(9, std::optional<std::int64_t>{});
        }
        if (update.elements) {
            stmt->bind(10, *update.elements);
        } else {
            stmt->bind(10, std::optional<std::int64_t>{});
        }
        if (stmt->step() != SQLITE_DONE) {
            return tl::unexpected(sqlite_error(fmt::format("cannot update job {}", id)));
        }
        applied[i] = sqlite3_changes(m_db) != 0;
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error("cannot record the refreshed job states"));
    }
    return applied;
}

Result<std::optional<JobRecord>> JobStore::get(std::int64_t id) {
    auto stmt = prepare(fmt::format("{} WHERE id = ?1", k_select_sql));
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, id);
    int rc = stmt->step();
    if (rc == SQLITE_DONE) {
        return std::optional<JobRecord>{};
    }
    if (rc != SQLITE_ROW) {
        return tl::unexpected(sqlite_error(fmt::format("cannot read job {}", id)));
    }
    std::optional<JobRecord> job(std::in_place);
    if (auto ok = read_row(*stmt, *job, m_path); !ok) {
        return tl::unexpected(ok.error());
    }
    return job;
}

// One statement per call whatever the filter; only placeholders are added to the SQL text.
Result<std::vector<JobRecord>> JobStore::list(const JobFilter& filter) {
    std::string sql = fmt::format("{} WHERE 1", k_select_sql);
    if (filter.active_only) {
        sql += fmt::format(" AND {}", k_active_sql);
    } else if (filter.ended_after) {
        sql += fmt::format(" AND ({} OR ended_at >= ?)", k_active_sql);
    }
    if (!filter.ids.empty()) {
        sql += " AND id IN (?";
        for (std::size_t i = 1; i < filter.ids.size(); ++i) {
            sql += ", ?";
        }
        sql += ")";
    }
    if (filter.cluster) {
        sql += " AND cluster = ?";
    }
    if (filter.name) {
        sql += " AND name = ?";
    }
    if (filter.state) {
        sql += " AND state = ?";
    }
    if (filter.top_level_only) {
        sql += " AND parent_id IS NULL";
    }
    if (!filter.parent_ids.empty()) {
        sql += " AND parent_id IN (?";
        for (std::size_t i = 1; i < filter.parent_ids.size(); ++i) {
            sql += ", ?";
        }
        sql += ")";
    }
    sql += " ORDER BY id";

    auto stmt = prepare(sql);
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    // Bind in the order the placeholders were added above.
    int index = 0;
    if (!filter.active_only && filter.ended_after) {
        stmt->bind(++index, *filter.ended_after);
    }
    for (std::int64_t id : filter.ids) {
        stmt->bind(++index, id);
    }
    if (filter.cluster) {
        stmt->bind(++index, *filter.cluster);
    }
    if (filter.name) {
        stmt->bind(++index, *filter.name);
    }
    if (filter.state) {
        stmt->bind(++index, to_string(*filter.state));
    }
    for (std::int64_t id : filter.parent_ids) {
        stmt->bind(++index, id);
    }

    std::vector<JobRecord> jobs;
    int rc = SQLITE_OK;
    while ((rc = stmt->step()) == SQLITE_ROW) {
        if (auto ok = read_row(*stmt, jobs.emplace_back(), m_path); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    if (rc != SQLITE_DONE) {
        return tl::unexpected(sqlite_error("cannot list jobs"));
    }
    return jobs;
}

Status JobStore::exec(const char* sql, std::string_view what) {
    if (sqlite3_exec(m_db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
        return tl::unexpected(sqlite_error(what));
    }
    return {};
}

Result<Stmt> JobStore::prepare(std::string_view sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(m_db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr) != SQLITE_OK) {
        sqlite3_finalize(raw);
        return tl::unexpected(sqlite_error("preparing a query"));
    }
    return Stmt(raw);
}

Result<WriteTxn> JobStore::begin_write() {
    WriteTxn txn(m_db);
    if (txn.begin() != SQLITE_OK) {
        return tl::unexpected(sqlite_error("starting a write"));
    }
    return txn;
}

Error JobStore::sqlite_error(std::string_view what) const {
    int rc = sqlite3_errcode(m_db);
    // SQLite calls a -shm or WAL that cannot grow "disk I/O error"; the system's errno says why.
    if (rc != SQLITE_FULL && sqlite3_system_errno(m_db) == ENOSPC) {
        return Error{ErrorKind::internal,
                     fmt::format("job store {}: {}: database or disk is full", m_path, what),
                     sqlite_hint(SQLITE_FULL)};
    }
    return Error{ErrorKind::internal, fmt::format("job store {}: {}: {}", m_path, what, sqlite3_errmsg(m_db)),
                 sqlite_hint(rc)};
}

Status JobStore::not_found(std::int64_t id) const {
    return fail(ErrorKind::not_found, fmt::format("no job {} in job store {}", id, m_path),
                "`tandem status` lists the jobs this machine knows");
}

} // namespace tandem::store
