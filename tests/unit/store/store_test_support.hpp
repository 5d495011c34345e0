#pragma once
// Shared by the store tests: a throwaway folder, a sample job, and raw SQLite access for looking at (or
// tampering with) the file behind the store's back.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <sqlite3.h>

#include "core/job.hpp"

namespace tandem::store::testing {

class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "tandem-store-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) {
            std::abort(); // nothing sensible to test without a folder
        }
        m_path = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return (m_path / name).string(); }

private:
    std::filesystem::path m_path;
};

inline JobRecord sample_job(const std::string& name) {
    JobRecord job;
    job.name = name;
    job.cluster = "local";
    job.backend = "local";
    job.submitted_at = 1'700'000'000;
    job.updated_at = 1'700'000'000;
    job.spec_json = R"({"name":")" + name + R"("})";
    job.placement_json = R"({"cluster":"local"})";
    return job;
}

// Runs SQL on its own connection; returns SQLite's result code.
inline int raw_exec(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open(path.c_str(), &db);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 10000);
        rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    }
    sqlite3_close(db);
    return rc;
}

// First column of the first row as an integer, or -1 when the query fails or returns nothing.
inline std::int64_t raw_int(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
    std::int64_t value = -1;
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

inline std::string raw_text(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
    std::string value;
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        if (const auto* text = sqlite3_column_text(stmt, 0)) {
            value = reinterpret_cast<const char*>(text);
        }
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

} // namespace tandem::store::testing
