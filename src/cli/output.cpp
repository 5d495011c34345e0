#include "cli/output.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include <fmt/format.h>

#include "core/job_recovery.hpp"
#include "core/sweep.hpp"

namespace tandem::cli {

namespace {

// Display width of UTF-8 text: code points, not bytes, and ANSI colour sequences take no room.
std::size_t display_width(const std::string& s) {
    std::size_t width = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\x1b') {
            while (i < s.size() && s[i] != 'm') {
                ++i;
            }
            continue;
        }
        width += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 ? 1 : 0;
    }
    return width;
}

} // namespace

std::vector<std::size_t> Table::widths() const {
    std::vector<std::size_t> widths(m_headers.size(), 0);
    auto measure = [&](const std::vector<std::string>& row) {
        for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
            widths[i] = std::max(widths[i], display_width(row[i]));
        }
    };
    measure(m_headers);
    for (const auto& r : m_rows) {
        measure(r);
    }
    return widths;
}

std::string Table::render_row(const std::vector<std::string>& row, const std::vector<std::size_t>& widths) {
    std::string line;
    for (std::size_t i = 0; i < widths.size(); ++i) {
        const std::string& cell = i < row.size() ? row[i] : std::string();
        line += cell;
        if (i + 1 < widths.size()) {
            const auto w = display_width(cell);
            line.append(widths[i] > w ? widths[i] - w + 3 : 3, ' ');
        }
    }
    while (!line.empty() && line.back() == ' ') {
        line.pop_back();
    }
    return line + '\n';
}

std::string Table::render() const {
    const auto w = widths();
    std::string out;
    out.reserve((m_rows.size() + 1) * 80);
    out += render_row(m_headers, w);
    for (const auto& r : m_rows) {
        out += render_row(r, w);
    }
    return out;
}

// Asked once per process: a table of 2,000 rows asks for its colours 2,000 times, and each isatty() is an
// ioctl (a failing TCGETS when stdout is a file or a pipe).
bool stdout_is_terminal() {
    static const bool terminal = isatty(STDOUT_FILENO) == 1;
    return terminal;
}
bool stderr_is_terminal() {
    static const bool terminal = isatty(STDERR_FILENO) == 1;
    return terminal;
}

bool colour_enabled() {
    static const bool enabled = [] {
        const char* no_colour = std::getenv("NO_COLOR");
        const char* term = std::getenv("TERM");
        return stdout_is_terminal() && (no_colour == nullptr || *no_colour == '\0') &&
               !(term != nullptr && std::strcmp(term, "dumb") == 0);
    }();
    return enabled;
}

std::string coloured_state(std::string_view state) {
    if (!colour_enabled()) {
        return std::string(state);
    }
    const char* code = "";
    if (state == "SUCCEEDED") {
        code = "32"; // green
    } else if (state.rfind("FAILED", 0) == 0 || state.rfind("UNKNOWN", 0) == 0) {
        code = "31"; // red
    } else if (state == "PENDING" || state == "STARTING") {
        code = "33"; // yellow
    } else if (state == "RUNNING") {
        code = "36"; // cyan
    } else {
        return std::string(state);
    }
    return fmt::format("\x1b[{}m{}\x1b[0m", code, state);
}

std::string iso_time(std::int64_t unix_seconds) {
    std::time_t t = static_cast<std::time_t>(unix_seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

nlohmann::json job_json(const JobRecord& job, bool unreachable, const std::string& unreachable_reason) {
    auto opt_time = [](const std::optional<std::int64_t>& t) -> nlohmann::json {
        return t ? nlohmann::json(iso_time(*t)) : nlohmann::json(nullptr);
    };
    nlohmann::json j;
    j["id"] = job.id;
    j["name"] = job.name;
    j["cluster"] = job.cluster;
    j["backend"] = job.backend;
    j["remote_id"] = job.remote_id;
    j["state"] = unreachable ? "UNKNOWN" : to_string(job.state);
    j["last_known_state"] = to_string(job.state);
    j["state_age_seconds"] = std::max<std::int64_t>(0, now_seconds() - job.updated_at);
    j["reason"] = unreachable ? unreachable_reason : job.reason;
    j["exit_code"] = job.exit_code ? nlohmann::json(*job.exit_code) : nlohmann::json(nullptr);
    j["gpus"] = job.gpus;
    j["num_nodes"] = job.num_nodes;
    j["submitted_at"] = iso_time(job.submitted_at);
    j["started_at"] = opt_time(job.started_at);
    j["ended_at"] = opt_time(job.ended_at);
    // Recovery (resources.job_recovery): how many times the job ran again, and why each time.
    const auto events = parse_recoveries(job.recoveries);
    j["recoveries"] = events.size();
    auto list = nlohmann::json::array();
    for (std::size_t i = 0; i < events.size(); ++i) {
        list.push_back({{"attempt", i + 1}, {"reason", describe(events[i])},
                        {"counted", events[i].kind == RecoveryEvent::Kind::exit_code}});
    }
    j["recovered_attempts"] = std::move(list);
    // A sweep (issue 33): every element with its values, state and exit code.
    if (const auto sweep = sweep_of(job)) {
        const auto states = parse_element_states(job.elements).value_or(std::vector<ElementState>{});
        auto elements = nlohmann::json::array();
        for (std::size_t i = 0; i < sweep->size(); ++i) {
            nlohmann::json values = nlohmann::json::object();
            for (std::size_t k = 0; k < sweep->keys.size(); ++k) {
                values[sweep->keys[k]] = sweep->elements[i][k];
            }
            const ElementState e = i < states.size() ? states[i] : ElementState{job.state, std::nullopt};
            elements.push_back(
                {{"index", i},
                 {"values", std::move(values)},
                 {"state", to_string(e.state)},
                 {"exit_code", e.exit_code ? nlohmann::json(*e.exit_code) : nlohmann::json(nullptr)}});
        }
        j["elements"] = std::move(elements);
    }
    return j;
}

void print_stdout(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

void print_json(const nlohmann::json& j) {
    // Invalid UTF-8 in a job's name or reason must not abort the dump.
    print_stdout(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void note(const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
}

} // namespace tandem::cli
