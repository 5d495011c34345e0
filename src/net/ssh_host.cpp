#include "net/ssh_host.hpp"

#include <algorithm>

#include "net/ssh_connection.hpp"
#include "net/ssh_keys.hpp"

namespace tandem::net {

namespace {

constexpr std::size_t chunk = 32 * 1024;

bool sftp_missing(unsigned long status) {
    return status == LIBSSH2_FX_NO_SUCH_FILE || status == LIBSSH2_FX_NO_SUCH_PATH;
}

auto handle_closer(LIBSSH2_SFTP_HANDLE* h) {
    return [h](SshSession& s, SshClock::time_point d) {
        s.retry([&] { return libssh2().sftp_close_handle(h); }, d);
    };
}

// Opens `path` over the connection's SFTP session: the handle, or nullptr with `rc` saying why.
Result<LIBSSH2_SFTP_HANDLE*> open_remote(SshHost::Impl& impl, const std::string& path, unsigned long flags,
                                         long mode, int& rc) {
    auto sftp = impl.sftp();
    if (!sftp) {
        return tl::unexpected(sftp.error());
    }
    return impl.conn->target->retry_ptr<LIBSSH2_SFTP_HANDLE>(
        [&] {
            return libssh2().sftp_open_ex(*sftp, path.c_str(), static_cast<unsigned int>(path.size()), flags,
                                          mode, LIBSSH2_SFTP_OPENFILE);
        },
        impl.io_deadline(), rc);
}

} // namespace

SshHost::SshHost(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
SshHost::~SshHost() = default;

std::string SshHost::describe() const {
    return m_impl->route.target.describe();
}
int SshHost::handshakes() const {
    return m_impl->handshakes;
}
Status SshHost::connect() {
    return m_impl->ensure();
}

Status SshHost::reconnect() {
    if (m_impl->conn) {
        m_impl->conn->broken = true; // never wait on a connection we are giving up
        m_impl->conn.reset();
    }
    m_impl->lost.clear();
    return m_impl->open();
}

Result<ExecResult> SshHost::exec(const std::string& command, std::string_view input) {
    // The streaming command with its input from `input` and its output collected whole.
    ExecResult out;
    ExecStreams io;
    std::size_t sent = 0;
    if (!input.empty()) {
        io.produce = [&](char* buffer, std::size_t capacity) -> Result<std::size_t> {
            const std::size_t n = std::min(capacity, input.size() - sent);
            std::copy_n(input.data() + sent, n, buffer);
            sent += n;
            return n;
        };
    }
    io.out = [&](std::string_view bytes) { out.out.append(bytes); };
    io.err = [&](std::string_view bytes) { out.err.append(bytes); };
    auto status = exec_streaming(command, io);
    if (!status) {
        return tl::unexpected(status.error());
    }
    out.exit_status = *status;
    return out;
}

Result<std::optional<RemoteFileInfo>> SshHost::stat(const std::string& path) {
    auto& impl = *m_impl;
    auto sftp = impl.sftp();
    if (!sftp) {
        return tl::unexpected(sftp.error());
    }
    LIBSSH2_SFTP_ATTRIBUTES a{};
    int rc = impl.conn->target->retry(
        [&] {
            return libssh2().sftp_stat_ex(*sftp, path.c_str(), static_cast<unsigned int>(path.size()),
                                          LIBSSH2_SFTP_STAT, &a);
        },
        impl.io_deadline());
    if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL && sftp_missing(impl.sftp_status())) {
        return std::optional<RemoteFileInfo>();
    }
    if (rc != 0) {
        return impl.failure(rc, "stat " + path);
    }
    RemoteFileInfo info;
    info.size = a.filesize;
    info.mtime = static_cast<std::int64_t>(a.mtime);
    info.is_dir = LIBSSH2_SFTP_S_ISDIR(a.permissions);
    return std::optional<RemoteFileInfo>(info);
}

Result<std::optional<std::string>> SshHost::read(const std::string& path, std::uint64_t offset,
                                                 std::uint64_t max_bytes) {
    auto& impl = *m_impl;
    int rc = 0;
    auto opened = open_remote(impl, path, LIBSSH2_FXF_READ, 0, rc);
    if (!opened) {
        return tl::unexpected(opened.error());
    }
    SshSession& s = *impl.conn->target;
    LIBSSH2_SFTP_HANDLE* h = *opened;
    if (!h) {
        if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL && sftp_missing(impl.sftp_status())) {
            return std::optional<std::string>();
        }
        return impl.failure(rc, "opening " + path);
    }
    OnExit guard(impl, handle_closer(h));
    libssh2().sftp_seek64(h, offset);
    std::string data;
    char buf[chunk];
    while (data.size() < max_bytes) {
        auto want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, max_bytes - data.size()));
        ssize_t n = 0;
        rc = s.retry(
            [&] {
                n = libssh2().sftp_read(h, buf, want);
                return n < 0 ? static_cast<int>(n) : 0;
            },
            impl.io_deadline());
        if (rc != 0) {
            return impl.failure(rc, "reading " + path);
        }
        if (n == 0) {
            break;
        }
        data.append(buf, static_cast<std::size_t>(n));
    }
    return std::optional<std::string>(std::move(data));
}

Status SshHost::write(const std::string& path, std::string_view data, int mode) {
    auto& impl = *m_impl;
    int rc = 0;
    auto opened = open_remote(impl, path, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, mode, rc);
    if (!opened) {
        return tl::unexpected(opened.error());
    }
    SshSession& s = *impl.conn->target;
    LIBSSH2_SFTP_HANDLE* h = *opened;
    if (!h) {
        return impl.failure(rc, "creating " + path);
    }
    OnExit guard(impl, handle_closer(h));
    // An existing file keeps its old mode through O_TRUNC, and a new one gets the server's umask: set it.
    LIBSSH2_SFTP_ATTRIBUTES attrs{};
    attrs.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS;
    attrs.permissions = static_cast<unsigned long>(mode);
    rc = s.retry([&] { return libssh2().sftp_fstat_ex(h, &attrs, 1); }, impl.io_deadline());
    if (rc != 0) {
        return impl.failure(rc, "setting the mode of " + path);
    }
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = 0;
        // In non-blocking mode libssh2 wants the same buffer again after EAGAIN.
        rc = s.retry(
            [&] {
                n = libssh2().sftp_write(h, data.data() + done, std::min(chunk * 4, data.size() - done));
                return n < 0 ? static_cast<int>(n) : 0;
            },
            impl.io_deadline());
        if (rc != 0) {
            return impl.failure(rc, "writing " + path);
        }
        done += static_cast<std::size_t>(n);
    }
    return {};
}

Status SshHost::make_dirs(const std::string& path) {
    std::string prefix = path.starts_with("/") ? "/" : "";
    std::size_t start = 0;
    while (start < path.size()) {
        auto slash = path.find('/', start);
        auto part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        start = slash == std::string::npos ? path.size() : slash + 1;
        if (part.empty() || part == ".") {
            continue;
        }
        prefix += (prefix.empty() || prefix.ends_with("/") ? "" : "/") + part;
        auto info = stat(prefix);
        if (!info) {
            return tl::unexpected(info.error());
        }
        if (*info) {
            if (!(*info)->is_dir) {
                return fail(ErrorKind::remote, m_impl->who() + ": " + prefix + " exists and is not a folder");
            }
            continue;
        }
        auto& impl = *m_impl;
        int rc = impl.conn->target->retry(
            [&] {
                return libssh2().sftp_mkdir_ex(impl.conn->sftp, prefix.c_str(),
                                               static_cast<unsigned int>(prefix.size()), 0700);
            },
            impl.io_deadline());
        if (rc != 0) {
            // Someone else may have made it meanwhile.
            auto again = stat(prefix);
            if (again && *again && (*again)->is_dir) {
                continue;
            }
            return impl.failure(rc, "making the folder " + prefix);
        }
    }
    return {};
}

} // namespace tandem::net
