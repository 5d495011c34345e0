#include "net/ssh_connection.hpp"

#include <algorithm>
#include <cstdlib>
#include <pwd.h>
#include <random>
#include <thread>
#include <unistd.h>

namespace tandem::net {

SshConnection::~SshConnection() {
    if (broken) {
        if (target) {
            target->kill();
        }
        for (auto& j : jumps) {
            j->kill();
        }
    }
    if (sftp && target) {
        auto deadline = SshClock::now() + std::chrono::seconds(1);
        target->retry([&] { return libssh2().sftp_shutdown(sftp); }, deadline);
    }
    target.reset();
    for (std::size_t i = jumps.size(); i-- > 0;) {
        if (i < tunnels.size()) {
            tunnels[i].reset();
        }
        jumps[i].reset();
    }
}

Status SshHost::Impl::open() {
    // sshd closes new connections during the handshake while more than MaxStartups (default 10:30:100)
    // are unauthenticated: many tandem processes at once (CI fan-out) meet that. Such a close is tried
    // again on a new connection, a few times with growing, jittered pauses, within connect_timeout.
    const auto deadline = SshClock::now() + options.connect_timeout;
    thread_local std::mt19937 rng{std::random_device{}()};
    std::chrono::milliseconds pause{100};
    for (int attempt = 1;; ++attempt) {
        bool closed = false;
        auto st = open_once(closed);
        if (st || !closed) {
            return st;
        }
        const auto jittered = pause / 2 + std::chrono::milliseconds(std::uniform_int_distribution<long>(
                                              0, static_cast<long>(pause.count() / 2))(rng));
        if (attempt == k_handshake_attempts || SshClock::now() + jittered >= deadline) {
            Error e = st.error();
            e.message += " (the server closed " + std::to_string(attempt) +
                         (attempt == 1 ? std::string(" connection)") : std::string(" connections in a row)"));
            if (e.hint.empty()) {
                e.hint = "sshd closes new connections while more than its MaxStartups are unauthenticated: "
                         "fewer at once, or a higher MaxStartups in sshd_config";
            }
            return tl::unexpected(std::move(e));
        }
        ssh_debug(options, st.error().message + "; trying a new connection in " +
                               std::to_string(jittered.count()) + " ms");
        std::this_thread::sleep_for(jittered);
        pause = std::min(pause * 2, std::chrono::milliseconds(1600));
    }
}

Status SshHost::Impl::open_once(bool& closed_in_handshake) {
    const SshEndpoint& first = route.jumps.empty() ? route.target : route.jumps.front();
    ssh_debug(options, "connecting to " + route.describe());
    auto fd = tcp_connect(first.host, first.port, options.connect_timeout, first.describe());
    if (!fd) {
        return tl::unexpected(fd.error());
    }
    auto c = std::make_unique<SshConnection>();
    int next_fd = *fd;
    for (std::size_t i = 0; i < route.jumps.size(); ++i) {
        auto s = SshSession::open(next_fd, route.jumps[i], route.default_identities, options,
                                  &closed_in_handshake);
        if (!s) {
            return tl::unexpected(s.error());
        }
        c->jumps.push_back(std::move(*s));
        const SshEndpoint& next = i + 1 < route.jumps.size() ? route.jumps[i + 1] : route.target;
        auto t = SshTunnel::open(*c->jumps.back(), next.host, next.port, options);
        if (!t) {
            return tl::unexpected(t.error());
        }
        next_fd = (*t)->release_fd();
        c->tunnels.push_back(std::move(*t));
    }
    auto s = SshSession::open(next_fd, route.target, route.default_identities, options, &closed_in_handshake);
    if (!s) {
        return tl::unexpected(s.error());
    }
    c->target = std::move(*s);
    conn = std::move(c);
    lost.clear();
    ++handshakes;
    return {};
}

Status SshHost::Impl::ensure() {
    if (conn) {
        return {};
    }
    if (!lost.empty()) {
        return fail(ErrorKind::unavailable, who() + ": the connection was lost (" + lost + ")",
                    "run the command again to reconnect");
    }
    return open();
}

void SshHost::Impl::drop(const std::string& why) {
    if (conn) {
        conn->broken = true;
        conn.reset();
    }
    lost = why;
    ssh_debug(options, "dropped the connection to " + route.target.describe() + ": " + why);
}

tl::unexpected<Error> SshHost::Impl::failure(int rc, const std::string& doing) {
    Error e = ssh_error(rc, *conn->target, who() + ": " + doing);
    if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL && conn->sftp) {
        e.message += " (SFTP status " + std::to_string(sftp_status()) + ")";
    }
    if (ssh_transport_broken(rc)) {
        drop(e.message.substr(who().size() + 2));
    }
    return tl::unexpected(std::move(e));
}

Result<LIBSSH2_SFTP*> SshHost::Impl::sftp() {
    auto st = ensure();
    if (!st) {
        return tl::unexpected(st.error());
    }
    if (!conn->sftp) {
        int rc = 0;
        auto& s = *conn->target;
        conn->sftp =
            s.retry_ptr<LIBSSH2_SFTP>([&] { return libssh2().sftp_init(s.raw()); }, io_deadline(), rc);
        if (!conn->sftp) {
            return failure(rc, "starting SFTP");
        }
    }
    return conn->sftp;
}

unsigned long SshHost::Impl::sftp_status() const {
    return conn && conn->sftp ? libssh2().sftp_last_error(conn->sftp) : 0;
}

namespace {

std::string home_folder(const SshOptions& options) {
    if (!options.home.empty()) {
        return options.home;
    }
    if (const char* h = std::getenv("HOME"); h && *h) {
        return h;
    }
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) {
        return pw->pw_dir;
    }
    return "/";
}

std::string local_user() {
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_name) {
        return pw->pw_name;
    }
    if (const char* u = std::getenv("USER"); u && *u) {
        return u;
    }
    return "root";
}

} // namespace

Result<std::unique_ptr<SshHost>> make_ssh_host(const SshTarget& target, const SshOptions& options) {
    SshLocal local{home_folder(options), local_user()};
    const std::string config_path =
        options.config_path.empty() ? local.home + "/.ssh/config" : options.config_path;
    auto route = resolve_ssh_route(target, config_path, local, file_system_source());
    if (!route) {
        return tl::unexpected(route.error());
    }
    auto impl = std::make_unique<SshHost::Impl>();
    impl->route = std::move(*route);
    impl->options = options;
    ssh_debug(options, "route: " + impl->route.describe());
    return std::make_unique<SshHost>(std::move(impl));
}

Result<std::unique_ptr<RemoteHost>> connect_ssh(const SshTarget& target, const SshOptions& options) {
    auto host = make_ssh_host(target, options);
    if (!host) {
        return tl::unexpected(host.error());
    }
    return std::unique_ptr<RemoteHost>(std::move(*host));
}

} // namespace tandem::net
