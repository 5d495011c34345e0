// The GET /jobs skimmer (see jobs_skim.hpp). It trusts nothing: every step checks bounds, strings must
// close, brackets must match, and a kept value must be valid JSON on its own.

#include "backends/slurm/jobs_skim.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "backends/slurm/rest_json.hpp"

namespace tandem::slurm::rest {

namespace {

using nlohmann::json;

class Skimmer {
public:
    explicit Skimmer(std::string_view text) : m_p(text.data()), m_end(text.data() + text.size()) {}

    std::optional<json> answer(FieldFilter keep) {
        json out = json::object();
        bool ok = members([&](std::string_view key) {
            if (key == "jobs") {
                json jobs = json::array();
                if (!job_list(keep, jobs)) {
                    return false;
                }
                out["jobs"] = std::move(jobs);
                return true;
            }
            auto value = whole_value();
            if (!value) {
                return false;
            }
            out[std::string(key)] = std::move(*value);
            return true;
        });
        space();
        if (!ok || m_p != m_end) {
            return std::nullopt;
        }
        return out;
    }

private:
    void space() {
        while (m_p < m_end && (*m_p == ' ' || *m_p == '\n' || *m_p == '\r' || *m_p == '\t')) {
            ++m_p;
        }
    }

    bool take(char c) {
        space();
        if (m_p < m_end && *m_p == c) {
            ++m_p;
            return true;
        }
        return false;
    }

    // At an opening quote: moves past the closing one. `escaped` tells whether a backslash occurred.
    bool string(bool& escaped) {
        ++m_p;
        escaped = false;
        while (m_p < m_end) {
            const char c = *m_p;
            if (c == '"') {
                ++m_p;
                return true;
            }
            if (c == '\\') {
                if (m_end - m_p < 2) {
                    return false;
                }
                escaped = true;
                m_p += 2;
                continue;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                return false; // control characters must be escaped
            }
            ++m_p;
        }
        return false;
    }

    // Steps over one value of any kind, checking only that strings close and brackets match.
    bool skip_value() {
        space();
        if (m_p >= m_end) {
            return false;
        }
        bool escaped = false;
        if (*m_p == '"') {
            return string(escaped);
        }
        if (*m_p != '{' && *m_p != '[') {
            const char* start = m_p;
            while (m_p < m_end && (std::isalnum(static_cast<unsigned char>(*m_p)) || *m_p == '-' ||
                                   *m_p == '+' || *m_p == '.')) {
                ++m_p;
            }
            return m_p > start;
        }
        m_stack.clear();
        do {
            const char c = *m_p;
            if (c == '"') {
                if (!string(escaped)) {
                    return false;
                }
                continue;
            }
            if (c == '{' || c == '[') {
                m_stack.push_back(c == '{' ? '}' : ']');
            } else if (c == '}' || c == ']') {
                if (m_stack.empty() || m_stack.back() != c) {
                    return false;
                }
                m_stack.pop_back();
            }
            ++m_p;
        } while (!m_stack.empty() && m_p < m_end);
        return m_stack.empty();
    }

    // One value parsed by nlohmann from its own text.
    std::optional<json> whole_value() {
        space();
        const char* start = m_p;
        if (!skip_value()) {
            return std::nullopt;
        }
        // Plain ASCII strings are most of what is kept; they need no full parser (which would also check
        // UTF-8, so anything else goes through it).
        if (*start == '"' && std::all_of(start, m_p, [](char c) { return c != '\\' && (c & 0x80) == 0; })) {
            return json(std::string(start + 1, m_p - 1));
        }
        json value = json::parse(start, m_p, nullptr, false);
        if (value.is_discarded()) {
            return std::nullopt;
        }
        return value;
    }

    // An object's members: `member(key)` consumes each value.
    template <typename F> bool members(F&& member) {
        if (!take('{')) {
            return false;
        }
        if (take('}')) {
            return true;
        }
        do {
            space();
            if (m_p >= m_end || *m_p != '"') {
                return false;
            }
            const char* start = m_p;
            bool escaped = false;
            if (!string(escaped)) {
                return false;
            }
            std::string decoded;
            std::string_view key(start + 1, static_cast<std::size_t>(m_p - start - 2));
            if (escaped) {
                json k = json::parse(start, m_p, nullptr, false);
                if (!k.is_string()) {
                    return false;
                }
                decoded = k.get<std::string>();
                key = decoded;
            }
            if (!take(':') || !member(key)) {
                return false;
            }
        } while (take(','));
        return take('}');
    }

    bool job_list(FieldFilter keep, json& jobs) {
        if (!take('[')) {
            return false;
        }
        if (take(']')) {
            return true;
        }
        do {
            space();
            if (m_p < m_end && *m_p == '{') {
                json job = json::object();
                const bool ok = members([&](std::string_view key) {
                    if (!keep(key)) {
                        return skip_value();
                    }
                    auto value = whole_value();
                    if (!value) {
                        return false;
                    }
                    job[std::string(key)] = std::move(*value);
                    return true;
                });
                if (!ok) {
                    return false;
                }
                jobs.push_back(std::move(job));
            } else {
                auto value = whole_value(); // not an object: kept as is, for the parser to refuse
                if (!value) {
                    return false;
                }
                jobs.push_back(std::move(*value));
            }
        } while (take(','));
        return take(']');
    }

    const char* m_p;
    const char* m_end;
    std::vector<char> m_stack;
};

} // namespace

std::optional<nlohmann::json> skim_jobs(std::string_view body, FieldFilter keep) {
    return Skimmer(body).answer(keep);
}

std::optional<std::int64_t> latest_job_event(const nlohmann::json& answer) {
    const auto& jobs = at_path(answer, {"jobs"});
    if (!jobs.is_array()) {
        return std::nullopt;
    }
    std::optional<std::int64_t> latest;
    for (const auto& job : jobs) {
        for (const auto* key :
             {"submit_time", "eligible_time", "start_time", "end_time", "last_sched_evaluation"}) {
            if (const auto t = timestamp(job, key); t && (!latest || *t > *latest)) {
                latest = t;
            }
        }
    }
    return latest;
}

} // namespace tandem::slurm::rest
