#pragma once
// `tandem dashboard`: the command line's half. The page server links cpp-httplib (and through it OpenSSL,
// zlib and brotli), which every other command would pay for at start-up; so it is a helper program,
// tandem-dashboard, installed beside tandem and built from the same libraries. `tandem dashboard` checks
// its flags and hands over to the helper (execv), whose main registers the runner below and then parses
// the same command line with the same command table.

#include "cli/context.hpp"
#include "core/error.hpp"

namespace CLI {
class App;
}

namespace tandem::cli {

struct DashboardFlags {
    int port = 0;                 // 0: any free port
    std::string host = "127.0.0.1";
    bool expose = false;          // required for a --host that is not loopback
    bool open = false;            // start a browser on the URL
    bool allow_cancel = false;    // cancel buttons (POST with the CSRF check)
    int refresh_seconds = 5;      // how often the shared refresh asks the clusters, while pages look
};

// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool is_loopback_host(const std::string& host);
// The flags' own rules (a non-loopback --host needs --expose; the refresh period's bounds).
Status check_dashboard_flags(const DashboardFlags& flags);

using DashboardRunner = Result<int> (*)(Context& ctx, const DashboardFlags& flags);
// Set by tandem-dashboard's main; when unset, the command execs the helper.
void set_dashboard_runner(DashboardRunner runner);

// The helper's path: beside this executable, else ../lib/tandem/ of it.
Result<std::string> dashboard_helper_path();

} // namespace tandem::cli
