#pragma once
// What the CLI prints: aligned tables like `kubectl get`, pure JSON for --json, human durations, and
// whether colour is allowed (a terminal, NO_COLOR unset, TERM not dumb).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job.hpp"
#include "core/quantity.hpp"
#include "sys/clock.hpp"

namespace tandem::cli {

class Table {
public:
    explicit Table(std::vector<std::string> headers) : m_headers(std::move(headers)) {}
    void add(std::vector<std::string> row) { m_rows.push_back(std::move(row)); }
    bool empty() const { return m_rows.empty(); }
    std::string render() const; // trailing newline; columns separated by three spaces
    // Column widths of what render() prints, and one row laid out on them (for rows printed later, as
    // `status -w` does; a wider cell pushes the rest of its row right).
    std::vector<std::size_t> widths() const;
    static std::string render_row(const std::vector<std::string>& row,
                                  const std::vector<std::size_t>& widths);

private:
    std::vector<std::string> m_headers;
    std::vector<std::vector<std::string>> m_rows;
};

bool stdout_is_terminal();
bool stderr_is_terminal();
bool colour_enabled(); // for stdout
// The state name, coloured only when colour_enabled().
std::string coloured_state(std::string_view state);

std::string iso_time(std::int64_t unix_seconds); // 2026-12-02T13:45:00Z

using sys::now_seconds;

// The documented JSON shape of one job (README "JSON output").
nlohmann::json job_json(const JobRecord& job, bool unreachable, const std::string& unreachable_reason);

void print_stdout(const std::string& text);
void print_json(const nlohmann::json& j);
void note(const std::string& line); // progress and diagnostics: stderr, one line

} // namespace tandem::cli
