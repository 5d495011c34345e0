#pragma once
// Errors are values: every fallible call returns Result<T>. The class drives policy (retry, exit code);
// the message is one line meant for a person. Only main.cpp prints them.

#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace tandem {

enum class ErrorKind {
    invalid_spec, // the user's task file or flags are wrong
    config,       // the config file is wrong
    usage,        // the command line is wrong
    not_found,    // a job, cluster or file that does not exist
    unauthorized, // a backend refused our credentials
    unavailable,  // a backend could not be reached (retryable)
    timeout,      // a backend did not answer in time (retryable)
    remote,       // a backend answered with an error
    internal,     // a bug or an environment problem (disk, permissions)
};

struct Error {
    Error() = default;
    Error(ErrorKind k, std::string m, std::string h = {})
        : kind(k), message(std::move(m)), hint(std::move(h)) {}

    ErrorKind kind = ErrorKind::internal;
    std::string message;
    std::string hint; // optional: how to fix it, printed as "hint: ..."
    // Set by submit(): the backend answered and declined this job here (capacity, quota, partition,
    // admission). Nothing was created, and another cluster may take it: launch fails over.
    bool refused = false;
    // Set by submit() when it failed before anything reached the scheduler (an upload that broke off):
    // the job was not submitted, so it fails here rather than waiting to be found on the cluster.
    bool before_submit = false;
};

inline Error refusal(Error e) {
    e.refused = true;
    return e;
}

inline Error before_submit(Error e) {
    e.before_submit = true;
    return e;
}

template <typename T> using Result = tl::expected<T, Error>;
using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> fail(ErrorKind kind, std::string message, std::string hint = {}) {
    return tl::unexpected<Error>(Error{kind, std::move(message), std::move(hint)});
}

std::string_view to_string(ErrorKind kind);
bool is_retryable(ErrorKind kind);

} // namespace tandem
