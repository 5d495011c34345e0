// Service records (`tandem serve`): the cluster holds a service's state, the store only where it runs and
// the spec it was last given. Each write is one BEGIN IMMEDIATE transaction, like the job writes.

#include <fmt/core.h>

#include "store/job_store.hpp"
#include "store/sqlite_stmt.hpp"

namespace tandem::store {

namespace {

// Column order shared by get_service() and list_services(); read_service() depends on it.
constexpr std::string_view k_select_service_sql =
    "SELECT name, cluster, backend, namespace, created_at, updated_at, version, spec_json FROM services";

ServiceRecord read_service(const Stmt& row) {
    ServiceRecord service;
    service.name = row.text_at(0);
    service.cluster = row.text_at(1);
    service.backend = row.text_at(2);
    service.namespace_name = row.text_at(3);
    service.created_at = row.int64_at(4);
    service.updated_at = row.int64_at(5);
    service.version = static_cast<int>(row.int64_at(6));
    service.spec_json = row.text_at(7);
    return service;
}

} // namespace

Result<bool> JobStore::insert_service(const ServiceRecord& service) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto stmt = prepare("INSERT INTO services(name, cluster, backend, namespace, created_at, updated_at, "
                        "version, spec_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                        "ON CONFLICT(name) DO NOTHING");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, service.name);
    stmt->bind(2, service.cluster);
    stmt->bind(3, service.backend);
    stmt->bind(4, service.namespace_name);
    stmt->bind(5, service.created_at);
    stmt->bind(6, service.updated_at);
    stmt->bind(7, std::int64_t{service.version});
    stmt->bind(8, service.spec_json);
    if (stmt->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot insert service '{}'", service.name)));
    }
    if (sqlite3_changes(m_db) == 0) {
        return false; // the name is taken: the rollback leaves the existing row as it was
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot insert service '{}'", service.name)));
    }
    return true;
}

Result<std::optional<ServiceRecord>> JobStore::get_service(const std::string& name) {
    auto stmt = prepare(fmt::format("{} WHERE name = ?1", k_select_service_sql));
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, name);
    int rc = stmt->step();
    if (rc == SQLITE_DONE) {
        return std::optional<ServiceRecord>{};
    }
    if (rc != SQLITE_ROW) {
        return tl::unexpected(sqlite_error(fmt::format("cannot read service '{}'", name)));
    }
    return std::optional<ServiceRecord>{read_service(*stmt)};
}

Result<std::vector<ServiceRecord>> JobStore::list_services() {
    auto stmt = prepare(fmt::format("{} ORDER BY name", k_select_service_sql));
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    std::vector<ServiceRecord> out;
    int rc = SQLITE_OK;
    while ((rc = stmt->step()) == SQLITE_ROW) {
        out.push_back(read_service(*stmt));
    }
    if (rc != SQLITE_DONE) {
        return tl::unexpected(sqlite_error("cannot list services"));
    }
    return out;
}

Result<bool> JobStore::update_service(const std::string& name, int expected_version, int version,
                                      const std::string& spec_json, std::int64_t now) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto stmt = prepare("UPDATE services SET version = ?1, spec_json = ?2, updated_at = ?3 "
                        "WHERE name = ?4 AND version = ?5");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, std::int64_t{version});
    stmt->bind(2, spec_json);
    stmt->bind(3, now);
    stmt->bind(4, name);
    stmt->bind(5, std::int64_t{expected_version});
    if (stmt->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot update service '{}'", name)));
    }
    if (sqlite3_changes(m_db) == 0) {
        return false; // updated by someone else meanwhile, or gone: leave it
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot update service '{}'", name)));
    }
    return true;
}

Result<bool> JobStore::set_service_namespace(const std::string& name, const std::string& namespace_name) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto stmt = prepare("UPDATE services SET namespace = ?1 WHERE name = ?2");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, namespace_name);
    stmt->bind(2, name);
    if (stmt->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot record the namespace of service '{}'", name)));
    }
    const bool changed = sqlite3_changes(m_db) != 0;
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot record the namespace of service '{}'", name)));
    }
    return changed;
}

Result<bool> JobStore::remove_service(const std::string& name) {
    auto txn = begin_write();
    if (!txn) {
        return tl::unexpected(txn.error());
    }
    auto stmt = prepare("DELETE FROM services WHERE name = ?1");
    if (!stmt) {
        return tl::unexpected(stmt.error());
    }
    stmt->bind(1, name);
    if (stmt->step() != SQLITE_DONE) {
        return tl::unexpected(sqlite_error(fmt::format("cannot remove service '{}'", name)));
    }
    if (sqlite3_changes(m_db) == 0) {
        return false;
    }
    if (txn->commit() != SQLITE_OK) {
        return tl::unexpected(sqlite_error(fmt::format("cannot remove service '{}'", name)));
    }
    return true;
}

} // namespace tandem::store
