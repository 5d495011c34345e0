#pragma once
// Reading slurmrestd JSON without trusting its shape, for every API version. v0.0.38 writes plain
// numbers (with -1 or 0xffffffff for INFINITE); v0.0.40+ write {"set", "infinite", "number"} structs for
// most numbers. Both say "no value" with 0 for times. Every error list (errors[]) has the same entries:
// {error, error_number or error_code, description, source}.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tandem::slurm::rest {

// A number given plainly or as {set, infinite, number}. nullopt when absent, null, not set, infinite,
// or not a number.
std::optional<std::int64_t> number(const nlohmann::json& value);
std::optional<std::int64_t> number(const nlohmann::json& object, std::string_view key);
// True for {"infinite": true}, and for v0.0.38's -1 and 0xffffffff (INFINITE).
bool is_infinite(const nlohmann::json& value);
// A Unix time; 0 (Slurm's "not yet") and absent are nullopt.
std::optional<std::int64_t> timestamp(const nlohmann::json& object, std::string_view key);
// A string member, "" when absent or not a string.
std::string text(const nlohmann::json& object, std::string_view key);
// An accounting record's node list; "None assigned" (a job that never ran) is empty.
std::string db_nodes(const nlohmann::json& job);
// An array of strings; a lone string becomes one element.
std::vector<std::string> strings(const nlohmann::json& object, std::string_view key);
// object[a][b]... or a null json when any step is missing.
const nlohmann::json& at_path(const nlohmann::json& object, std::initializer_list<std::string_view> path);

// The job fields parse_jobs (v0.0.38 and v0.0.40+) reads. GET /jobs carries about a hundred fields per
// job (1 MB for 100 jobs); a refresh parses only these.
bool is_job_field(std::string_view key);

// `text` with its line breaks as spaces: a server's text quoted in an Error stays one line.
std::string one_line(std::string text);

// errors[] as one classified error (nullopt when the list is empty or absent). Slurm's "Invalid job id
// specified" (2017) is not_found; everything else is remote.
std::optional<Error> response_error(const nlohmann::json& body);

// v0.0.38's exit_code is the raw wait(2) status of the batch script: 768 is exit 3, 15 is SIGTERM.
struct ExitInfo {
    std::optional<int> exit_code;
    std::optional<int> signal;
};
ExitInfo decode_wait_status(std::int64_t status);

// The list `key` of `body`, or the error the body carries. A missing list with no error is an error too.
Result<const nlohmann::json*> list_or_error(const nlohmann::json& body, std::string_view key);

// Runs a parser, turning any nlohmann exception (a shape we did not expect) into a `remote` error.
template <typename F> auto guarded(std::string_view what, F&& parse) -> decltype(parse()) {
    try {
        return parse();
    } catch (const nlohmann::json::exception& e) {
        return fail(ErrorKind::remote,
                    std::string("slurm: unexpected ") + std::string(what) + ": " + e.what());
    }
}

// The frame every list endpoint shares: the list `key` (or the errors[] the body carries), each entry
// mapped by `read`, which may fail.
template <typename T, typename F>
Result<std::vector<T>> each(const nlohmann::json& body, std::string_view key, F&& read) {
    auto list = list_or_error(body, key);
    if (!list) {
        return tl::unexpected(list.error());
    }
    std::vector<T> out;
    out.reserve((*list)->size());
    for (const auto& item : **list) {
        auto one = read(item);
        if (!one) {
            return tl::unexpected(one.error());
        }
        out.push_back(std::move(*one));
    }
    return out;
}

} // namespace tandem::slurm::rest
