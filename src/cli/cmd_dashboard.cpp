// `tandem dashboard`: flags, their checks, and the hand-over to the tandem-dashboard helper (cli/dashboard.hpp).

#include "cli/dashboard.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"

namespace tandem::cli {

namespace {

DashboardRunner g_runner = nullptr;

std::string self_dir() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) {
        return ".";
    }
    std::string path(buf, static_cast<std::size_t>(n));
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

Result<int> hand_over(const DashboardFlags& flags) {
    auto helper = dashboard_helper_path();
    if (!helper) {
        return tl::unexpected(helper.error());
    }
    std::vector<std::string> args{"tandem", "dashboard", "--port", std::to_string(flags.port), "--host",
                                  flags.host, "--refresh", std::to_string(flags.refresh_seconds)};
    for (auto [on, flag] : {std::pair{flags.expose, "--expose"}, std::pair{flags.open, "--open"},
                            std::pair{flags.allow_cancel, "--allow-cancel"}}) {
        if (on) {
            args.emplace_back(flag);
        }
    }
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    ::execv(helper->c_str(), argv.data());
    return fail(ErrorKind::internal, fmt::format("cannot start {}: {}", *helper, std::strerror(errno)));
}

} // namespace

bool is_loopback_host(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

Status check_dashboard_flags(const DashboardFlags& flags) {
    if (flags.port < 0 || flags.port > 65535) {
        return fail(ErrorKind::usage, fmt::format("--port {}: a port is 0 (any free one) to 65535", flags.port));
    }
    if (flags.refresh_seconds < 2 || flags.refresh_seconds > 3600) {
        return fail(ErrorKind::usage,
                    fmt::format("--refresh {}: the shared refresh runs every 2 to 3600 seconds", flags.refresh_seconds));
    }
    if (!is_loopback_host(flags.host) && !flags.expose) {
        return fail(ErrorKind::usage,
                    fmt::format("--host {} would serve every job, log and cluster of this account to the "
                                "network, behind only the token in the URL",
                                flags.host),
                    "add --expose if that is meant; to reach a login node's dashboard from a laptop, keep "
                    "127.0.0.1 and tunnel: ssh -L PORT:127.0.0.1:PORT LOGIN-NODE");
    }
    return {};
}

void set_dashboard_runner(DashboardRunner runner) {
    g_runner = runner;
}

Result<std::string> dashboard_helper_path() {
    const std::string dir = self_dir();
    const std::string candidates[] = {dir + "/tandem-dashboard", dir + "/../lib/tandem/tandem-dashboard"};
    for (const auto& c : candidates) {
        if (::access(c.c_str(), X_OK) == 0) {
            return c;
        }
    }
    return fail(ErrorKind::not_found,
                fmt::format("the dashboard's helper program is not installed: looked for {} and {}", candidates[0],
                            candidates[1]),
                "install tandem-dashboard beside tandem (cmake --install puts it there)");
}

void setup_dashboard(CLI::App& command, Action& action) {
    auto flags = std::make_shared<DashboardFlags>();
    command.add_option("--port", flags->port, "Port to serve on (default 0: any free port; the URL says which)");
    command.add_option("--host", flags->host, "Address to serve on (default 127.0.0.1)");
    command.add_flag("--expose", flags->expose,
                     "Allow a --host that is not loopback (the token in the URL is then all that guards it)");
    command.add_flag("--open", flags->open, "Open the URL in a browser (xdg-open)");
    command.add_flag("--allow-cancel", flags->allow_cancel,
                     "Add cancel buttons (read-only without it); a cancel needs the token and the page's CSRF check");
    command.add_option("--refresh", flags->refresh_seconds,
                       "Seconds between the clusters' refreshes while a page looks (default 5, 2-3600)");
    command.footer("Serves every job of every configured cluster, its log, groups, services and GPUs, from this\n"
                   "command only: Ctrl-C ends it and nothing stays running. The URL it prints (stdout) carries a\n"
                   "random token: without it every request is refused (401). Pages refresh every --refresh\n"
                   "seconds with one refresh per cluster shared by every open page; they work without JavaScript.");
    command.callback([flags, &action] {
        action = [flags](Context& ctx) -> Result<int> {
            if (auto ok = check_dashboard_flags(*flags); !ok) {
                return tl::unexpected(ok.error());
            }
            return g_runner ? g_runner(ctx, *flags) : hand_over(*flags);
        };
    });
}

} // namespace tandem::cli
