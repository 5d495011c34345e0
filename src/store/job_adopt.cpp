// Adopting jobs found on the clusters (issue 31): a job another job store launched (or this one, before
// it was lost) becomes a row here, once, whichever `status` finds it first.

#include <fmt/core.h>

#include "store/job_store.hpp"
#include "store/sqlite_stmt.hpp"

namespace tandem::store {

Result<std::vector<std::int64_t>> JobStore::adopt(const std::vector<Found>& found) {
    std::vector<std::int64_t> ids(found.size(), 0);
    if (found.empty()) {
        return ids;
    }
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto by_token = prepare("SELECT id FROM jobs WHERE submit_token = ?1 AND submit_token != '' LIMIT 1");
    auto by_remote = prepare(
        "SELECT 1 FROM jobs WHERE cluster = ?1 AND remote_id = ?2 UNION ALL "
        "SELECT 1 FROM job_attempts WHERE cluster = ?1 AND remote_id = ?2 LIMIT 1");
    if (!by_token || !by_remote) {
        return tl::unexpected(by_token ? by_remote.error() : by_token.error());
    }
    auto holding = [&](const std::string& token) -> std::optional<std::int64_t> {
        by_token->reset();
        by_token->bind(1, token);
        if (by_token->step() == SQLITE_ROW) {
            return by_token->int64_at(0);
        }
        return std::nullopt;
    };
    for (std::size_t i = 0; i < found.size(); ++i) {
        const JobRecord& job = found[i].job;
        if (holding(job.submit_token)) {
            continue;
        }
        by_remote->reset();
        by_remote->bind(1, job.cluster);
        by_remote->bind(2, job.remote_id);
        if (by_remote->step() == SQLITE_ROW) {
            continue;
        }
        JobRecord row = job;
        if (!found[i].group_token.empty()) {
            auto group = holding(found[i].group_token);
            if (!group) {
                auto made = insert_row(found[i].group);
                if (!made) {
                    return tl::unexpected(made.error());
                }
                group = *made;
            }
            row.parent_id = *group;
        }
        auto id = insert_row(row);
        if (!id) {
            return tl::unexpected(id.error());
        }
        ids[i] = *id;
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error("cannot adopt the jobs found on the clusters"));
    }
    return ids;
}

} // namespace tandem::store
