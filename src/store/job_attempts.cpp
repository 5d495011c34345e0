// Failover records: a job keeps its tandem id while it moves from one placement to the next, and every
// placement it left is kept in job_attempts so `status JOB` can show the history.

#include <fmt/core.h>

#include "store/job_store.hpp"
#include "store/sqlite_stmt.hpp"

namespace tandem::store {

Result<bool> JobStore::move_job(std::int64_t id, const std::string& expected_remote_id,
                                const Attempt& finished, const Move& to, std::int64_t now) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto move =
        prepare("UPDATE jobs SET cluster = ?1, backend = ?2, placement_json = ?3, gpus = ?4, "
                "remote_id = '', state = 'PENDING', reason = ?5, exit_code = NULL, started_at = NULL, "
                "ended_at = NULL, updated_at = ?6, submit_token = ?10 WHERE id = ?7 AND remote_id = ?8 AND "
                "(state NOT IN ('SUCCEEDED','FAILED','CANCELLED') OR "
                "(state = 'CANCELLED' AND reason <> ?9))");
    if (!move) {
        return tl::unexpected(move.error());
    }
    move->bind(1, to.cluster);
    move->bind(2, to.backend);
    move->bind(3, to.placement_json);
    move->bind(4, to.gpus);
    move->bind(5, to.reason);
    move->bind(6, now);
    move->bind(7, id);
    move->bind(8, expected_remote_id);
    move->bind(9, k_user_cancel_reason);
    move->bind(10, to.submit_token);
    if (move->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot move job {}", id)));
    }
    if (sqlite3_changes(m_db) == 0) {
        return false; // ended meanwhile (cancelled by the user) or moved by someone else: leave it
    }
    auto record =
        prepare("INSERT INTO job_attempts(job_id, attempt, cluster, backend, pool, remote_id, "
                "submitted_at, ended_at, outcome) SELECT ?1, coalesce(max(attempt), 0) + 1, ?2, ?3, "
                "?4, ?5, ?6, ?7, ?8 FROM job_attempts WHERE job_id = ?1");
    if (!record) {
        return tl::unexpected(record.error());
    }
    record->bind(1, id);
    record->bind(2, finished.cluster);
    record->bind(3, finished.backend);
    record->bind(4, finished.pool);
    record->bind(5, finished.remote_id);
    record->bind(6, finished.submitted_at);
    record->bind(7, finished.ended_at);
    record->bind(8, finished.outcome);
    if (record->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot record an attempt of job {}", id)));
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot move job {}", id)));
    }
    return true;
}

Result<std::vector<Attempt>> JobStore::attempts(std::int64_t id) {
    auto stmt = prepare("SELECT attempt, cluster, backend, pool, remote_id, submitted_at, ended_at, outcome "
                        "FROM job_attempts WHERE job_id = ?1 ORDER BY attempt");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, id);
    std::vector<Attempt> out;
    int rc = SQLITE_OK;
    while ((rc = stmt->step()) == SQLITE_ROW) {
        Attempt& a = out.emplace_back();
        a.number = static_cast<int>(stmt->int64_at(0));
        a.cluster = stmt->text_at(1);
        a.backend = stmt->text_at(2);
        a.pool = stmt->text_at(3);
        a.remote_id = stmt->text_at(4);
        a.submitted_at = stmt->int64_at(5);
        a.ended_at = stmt->int64_at(6);
        a.outcome = stmt->text_at(7);
    }
    if (rc != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot read the attempts of job {}", id)));
    }
    return out;
}

} // namespace tandem::store
