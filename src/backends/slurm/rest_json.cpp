// Shape-tolerant readers for slurmrestd JSON (see rest_json.hpp for the encodings they absorb).

#include "backends/slurm/rest_json.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tandem::slurm::rest {

namespace {

constexpr std::int64_t k_infinite32 = 0xffffffffLL; // INFINITE
constexpr std::int64_t k_no_val32 = 0xfffffffeLL;   // NO_VAL

const nlohmann::json& null_json() {
    static const nlohmann::json n;
    return n;
}

std::optional<std::int64_t> plain_number(const nlohmann::json& v) {
    if (v.is_number_integer()) {
        return v.get<std::int64_t>();
    }
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        return u > static_cast<std::uint64_t>(INT64_MAX)
                   ? std::nullopt
                   : std::optional<std::int64_t>(static_cast<std::int64_t>(u));
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        // Outside [-2^63, 2^63) (or NaN) the cast is undefined behaviour.
        return d >= -9223372036854775808.0 && d < 9223372036854775808.0
                   ? std::optional<std::int64_t>(static_cast<std::int64_t>(d))
                   : std::nullopt;
    }
    return std::nullopt;
}

} // namespace

const nlohmann::json& at_path(const nlohmann::json& object, std::initializer_list<std::string_view> path) {
    const nlohmann::json* cur = &object;
    for (const auto key : path) {
        if (!cur->is_object()) {
            return null_json();
        }
        const auto it = cur->find(key);
        if (it == cur->end()) {
            return null_json();
        }
        cur = &*it;
    }
    return *cur;
}

bool is_infinite(const nlohmann::json& value) {
    if (value.is_object()) {
        const auto& inf = at_path(value, {"infinite"});
        return inf.is_boolean() && inf.get<bool>();
    }
    const auto n = plain_number(value);
    return n && (*n == -1 || *n == k_infinite32);
}

std::optional<std::int64_t> number(const nlohmann::json& value) {
    if (value.is_object()) {
        if (is_infinite(value)) {
            return std::nullopt;
        }
        const auto& set = at_path(value, {"set"});
        if (set.is_boolean() && !set.get<bool>()) {
            return std::nullopt;
        }
        return plain_number(at_path(value, {"number"}));
    }
    const auto n = plain_number(value);
    if (n && (*n == k_no_val32 || is_infinite(value))) {
        return std::nullopt;
    }
    return n;
}

std::optional<std::int64_t> number(const nlohmann::json& object, std::string_view key) {
    return number(at_path(object, {key}));
}

std::optional<std::int64_t> timestamp(const nlohmann::json& object, std::string_view key) {
    auto t = number(object, key);
    if (t && *t <= 0) {
        return std::nullopt;
    }
    return t;
}

std::string text(const nlohmann::json& object, std::string_view key) {
    const auto& v = at_path(object, {key});
    return v.is_string() ? v.get<std::string>() : std::string();
}

std::string db_nodes(const nlohmann::json& job) {
    std::string nodes = text(job, "nodes");
    return nodes == "None assigned" ? std::string() : nodes;
}

std::vector<std::string> strings(const nlohmann::json& object, std::string_view key) {
    const auto& v = at_path(object, {key});
    std::vector<std::string> out;
    if (v.is_string()) {
        out.push_back(v.get<std::string>());
    } else if (v.is_array()) {
        for (const auto& s : v) {
            if (s.is_string()) {
                out.push_back(s.get<std::string>());
            }
        }
    }
    return out;
}

bool is_job_field(std::string_view key) {
    // The timestamps past end_time date the answer (latest_job_event) for incremental refreshes.
    static constexpr std::string_view fields[] = {"job_id",
                                                  "name",
                                                  "job_state",
                                                  "state_reason",
                                                  "exit_code",
                                                  "start_time",
                                                  "end_time",
                                                  "nodes",
                                                  "comment",
                                                  "standard_output",
                                                  "user_name",
                                                  "node_count",
                                                  "restart_cnt",
                                                  "array_job_id",
                                                  "array_task_id",
                                                  "array_task_string",
                                                  "submit_time",
                                                  "eligible_time",
                                                  "last_sched_evaluation"};
    return std::find(std::begin(fields), std::end(fields), key) != std::end(fields);
}

std::optional<Error> response_error(const nlohmann::json& body) {
    const auto& errors = at_path(body, {"errors"});
    if (!errors.is_array() || errors.empty()) {
        return std::nullopt;
    }
    std::string message;
    ErrorKind kind = ErrorKind::remote;
    for (const auto& e : errors) {
        std::string one = text(e, "error");
        const std::string description = text(e, "description");
        if (!description.empty() && description != one) {
            one += (one.empty() ? "" : ": ") + description;
        }
        // Error numbers are plain (and -1 is a real one, not INFINITE).
        auto code = plain_number(at_path(e, {"error_number"}));
        if (!code) {
            code = plain_number(at_path(e, {"error_code"}));
        }
        if (code) {
            one += fmt::format(" (error {})", *code);
            // ESLURM_INVALID_JOB_ID; ESLURM_REST_EMPTY_RESULT, slurmdbd's "Nothing found" for a job it has
            // no row of yet (an array element cancelled while pending, before accounting has it).
            if (*code == 2017 || *code == 9003) {
                kind = ErrorKind::not_found;
            }
        }
        if (one.empty()) {
            one = e.dump();
        }
        message += (message.empty() ? "" : "; ") + one;
    }
    return Error{kind, "slurm: " + one_line(std::move(message)), {}};
}

std::string one_line(std::string text) {
    std::replace_if(
        text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    return text;
}

ExitInfo decode_wait_status(std::int64_t status) {
    ExitInfo out;
    if (status < 0 || status >= k_no_val32) {
        return out;
    }
    const int sig = static_cast<int>(status & 0x7f);
    if (sig == 0) {
        out.exit_code = static_cast<int>((status >> 8) & 0xff);
    } else if (sig != 0x7f) { // 0x7f is "stopped", not an ending
        out.signal = sig;
    }
    return out;
}

Result<const nlohmann::json*> list_or_error(const nlohmann::json& body, std::string_view key) {
    const auto& list = at_path(body, {key});
    const auto err = response_error(body);
    if (list.is_array() && (!list.empty() || !err)) {
        return &list; // entries win over errors: Slurm reports partial failures alongside results
    }
    if (err) {
        return tl::unexpected(*err);
    }
    return fail(ErrorKind::remote, fmt::format("slurm: the response has no \"{}\" list", key));
}

} // namespace tandem::slurm::rest
