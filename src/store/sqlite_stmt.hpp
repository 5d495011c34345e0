#pragma once
// Tiny RAII wrappers over the SQLite C API, private to the store. Values are always bound, never spliced
// into SQL text, so names and specs containing quotes round-trip and can never change a query.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <sqlite3.h>

#include "sys/fault_point.hpp"

namespace tandem::store {

class Stmt {
public:
    Stmt() = default;
    explicit Stmt(sqlite3_stmt* stmt) : m_stmt(stmt) {}
    ~Stmt() { sqlite3_finalize(m_stmt); }
    Stmt(Stmt&& other) noexcept : m_stmt(std::exchange(other.m_stmt, nullptr)), m_bind_rc(other.m_bind_rc) {}
    Stmt& operator=(Stmt&& other) noexcept {
        std::swap(m_stmt, other.m_stmt);
        std::swap(m_bind_rc, other.m_bind_rc);
        return *this;
    }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    // Binds remember their first failure and step() reports it, so callers bind a row of values and check
    // once; a failed bind has already set the connection's error message.
    void bind(int index, std::int64_t value) { keep(sqlite3_bind_int64(m_stmt, index, value)); }
    void bind(int index, std::string_view value) {
        keep(
            sqlite3_bind_text(m_stmt, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT));
    }
    void bind(int index, std::optional<std::int64_t> value) {
        keep(value ? sqlite3_bind_int64(m_stmt, index, *value) : sqlite3_bind_null(m_stmt, index));
    }

    // SQLITE_ROW, SQLITE_DONE, or an error code.
    int step() { return m_bind_rc != SQLITE_OK ? m_bind_rc : sqlite3_step(m_stmt); }
    void reset() { sqlite3_reset(m_stmt); }

    std::int64_t int64_at(int column) const { return sqlite3_column_int64(m_stmt, column); }
    std::optional<std::int64_t> optional_int64_at(int column) const {
        if (sqlite3_column_type(m_stmt, column) == SQLITE_NULL) {
            return std::nullopt;
        }
        return sqlite3_column_int64(m_stmt, column);
    }
    std::string text_at(int column) const {
        const auto* text = sqlite3_column_text(m_stmt, column);
        if (text == nullptr) {
            return {};
        }
        return {reinterpret_cast<const char*>(text),
                static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, column))};
    }

private:
    void keep(int rc) {
        if (m_bind_rc == SQLITE_OK) {
            m_bind_rc = rc;
        }
    }

    sqlite3_stmt* m_stmt = nullptr;
    int m_bind_rc = SQLITE_OK;
};

// A write transaction taken with BEGIN IMMEDIATE, so the write lock is claimed up front (where the busy
// timeout applies) instead of on a read-to-write upgrade, which WAL refuses at once with SQLITE_BUSY.
// Rolls back unless committed.
class WriteTxn {
public:
    explicit WriteTxn(sqlite3* db) : m_db(db) {}
    ~WriteTxn() {
        if (m_open) {
            sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        }
    }
    WriteTxn(WriteTxn&& other) noexcept : m_db(other.m_db), m_open(std::exchange(other.m_open, false)) {}
    WriteTxn(const WriteTxn&) = delete;
    WriteTxn& operator=(const WriteTxn&) = delete;
    WriteTxn& operator=(WriteTxn&&) = delete;

    int begin() {
        int rc = sqlite3_exec(m_db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
        m_open = rc == SQLITE_OK;
        return rc;
    }
    int commit() {
        sys::fault_point("store.write"); // fault-injection tests: killed with the transaction open
        int rc = sqlite3_exec(m_db, "COMMIT", nullptr, nullptr, nullptr);
        // A failed COMMIT may leave the transaction open (e.g. SQLITE_BUSY); the destructor then rolls back.
        m_open = rc != SQLITE_OK && sqlite3_get_autocommit(m_db) == 0;
        return rc;
    }

private:
    sqlite3* m_db;
    bool m_open = false;
};

// How to fix a failed SQLite call, for Error::hint; empty when there is nothing useful to say.
inline std::string sqlite_hint(int rc) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return "another tandem process held the job store for too long; try again";
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return "the file is damaged; move it aside and tandem will start a new one";
    case SQLITE_FULL:
        return "the disk is full: free some space on it and try again";
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
        return "check that the folder exists and is writable";
    default:
        return {};
    }
}

} // namespace tandem::store
