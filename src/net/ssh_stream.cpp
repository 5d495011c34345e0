// SshHost::exec_streaming: a command on its own channel with stdin, stdout and stderr streamed, and
// optionally a pseudo-terminal (`tandem shell`). Everything runs on the one non-blocking session: the
// loop writes what input it has, reads what output has come, and polls the socket (and, for a terminal,
// the local input) when neither can move.

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "net/ssh_connection.hpp"
#include "net/ssh_host.hpp"
#include "net/ssh_keys.hpp"

namespace tandem::net {

namespace {

constexpr std::size_t k_read_chunk = 64 * 1024;
constexpr std::size_t k_input_chunk = 256 * 1024;

// Waits for the session's socket (in the directions libssh2 is blocked on) and, when asked, for
// `input_fd` to be readable. Returns false at the deadline; sets `input_ready`.
bool wait_for(const SshSession& s, int input_fd, bool want_input, SshClock::time_point deadline,
              bool& input_ready) {
    input_ready = false;
    pollfd p[2]{};
    p[0].fd = s.fd();
    p[0].events = POLLIN;
    if (libssh2().session_block_directions(s.raw()) & LIBSSH2_SESSION_BLOCK_OUTBOUND) {
        p[0].events |= POLLOUT;
    }
    nfds_t n = 1;
    if (want_input && input_fd >= 0) {
        p[1].fd = input_fd;
        p[1].events = POLLIN;
        n = 2;
    }
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SshClock::now()).count();
        if (left <= 0) {
            return false;
        }
        const int rc = ::poll(p, n, static_cast<int>(std::min<long long>(left, 1'000'000)));
        if (rc > 0) {
            input_ready = n == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
            return true;
        }
        if (rc == 0) {
            return false;
        }
        if (errno != EINTR) {
            return true;
        }
        // EINTR: a signal (a terminal resize) may need handling; let the caller look.
        return true;
    }
}

} // namespace

Result<int> SshHost::exec_streaming(const std::string& command, ExecStreams& io) {
    auto& impl = *m_impl;
    if (auto st = impl.ensure(); !st) {
        return tl::unexpected(st.error());
    }
    SshSession& s = *impl.conn->target;
    int rc = 0;
    LIBSSH2_CHANNEL* ch =
        s.retry_ptr<LIBSSH2_CHANNEL>([&] { return open_session(s.raw()); }, impl.io_deadline(), rc);
    if (!ch) {
        return impl.failure(rc, "opening a channel");
    }
    OnExit guard(impl, channel_freer(ch));
    if (io.pty) {
        rc = s.retry(
            [&] {
                return libssh2().channel_request_pty_ex(ch, io.term.c_str(), static_cast<unsigned>(io.term.size()),
                                                        nullptr, 0, io.pty->columns, io.pty->rows, 0, 0);
            },
            impl.io_deadline());
        if (rc != 0) {
            return impl.failure(rc, "asking for a terminal");
        }
    }
    rc = s.retry(
        [&] {
            return libssh2().channel_process_startup(ch, "exec", 4, command.c_str(),
                                                     static_cast<unsigned int>(command.size()));
        },
        impl.io_deadline());
    if (rc != 0) {
        return impl.failure(rc, "starting a command");
    }

    std::string input(k_input_chunk, '\0');
    std::size_t input_at = 0, input_end = 0;
    bool input_done = !io.produce && io.input_fd < 0;
    bool input_ready = false;
    bool eof_sent = false;
    auto next_deadline = [&] {
        return io.interactive ? SshClock::now() + std::chrono::milliseconds(250) : impl.io_deadline();
    };
    auto idle_deadline = next_deadline();
    char buf[k_read_chunk];
    for (;;) {
        bool progress = false;
        if (!eof_sent && input_at == input_end && !input_done) {
            input_at = input_end = 0;
            if (io.produce) {
                auto n = io.produce(input.data(), input.size());
                if (!n) {
                    return tl::unexpected(n.error()); // the guard frees the channel: the command sees its input cut
                }
                input_end = *n;
                input_done = *n == 0;
            } else if (input_ready) {
                const ssize_t n = ::read(io.input_fd, input.data(), input.size());
                if (n > 0) {
                    input_end = static_cast<std::size_t>(n);
                } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                    input_done = true;
                }
                input_ready = false;
            }
        }
        if (!eof_sent && input_at < input_end) {
            const ssize_t n = libssh2().channel_write_ex(ch, 0, input.data() + input_at, input_end - input_at);
            if (n > 0) {
                input_at += static_cast<std::size_t>(n);
                progress = true;
            } else if (n == LIBSSH2_ERROR_CHANNEL_CLOSED || n == LIBSSH2_ERROR_CHANNEL_EOF_SENT) {
                eof_sent = true; // the command stopped reading: like EPIPE
            } else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
                return impl.failure(static_cast<int>(n), "writing a command's input");
            }
        } else if (!eof_sent && input_done) {
            const int r = libssh2().channel_send_eof(ch);
            if (r == 0 || r == LIBSSH2_ERROR_CHANNEL_CLOSED) {
                eof_sent = true;
                progress = true;
            } else if (r != LIBSSH2_ERROR_EAGAIN) {
                return impl.failure(r, "closing a command's input");
            }
        }
        if (io.pty && io.resized) {
            if (auto size = io.resized()) {
                s.retry([&] { return libssh2().channel_request_pty_size_ex(ch, size->columns, size->rows, 0, 0); },
                        impl.io_deadline());
            }
        }
        bool drained = true;
        for (int stream : {0, SSH_EXTENDED_DATA_STDERR}) {
            for (;;) {
                const ssize_t n = libssh2().channel_read_ex(ch, stream, buf, sizeof buf);
                if (n > 0) {
                    const auto& sink = stream == 0 ? io.out : io.err;
                    if (sink) {
                        sink(std::string_view(buf, static_cast<std::size_t>(n)));
                    }
                    progress = true;
                    continue;
                }
                if (n == LIBSSH2_ERROR_EAGAIN) {
                    drained = false;
                } else if (n < 0) {
                    return impl.failure(static_cast<int>(n), "reading a command's output");
                }
                break;
            }
        }
        if (drained && libssh2().channel_eof(ch)) {
            break;
        }
        if (progress) {
            idle_deadline = next_deadline();
            continue;
        }
        // As in exec(): data may wait in libssh2's buffers while the socket is quiet.
        if (libssh2().channel_eof(ch) != 0 || libssh2().poll_channel_read(ch, 0) != 0 ||
            libssh2().poll_channel_read(ch, SSH_EXTENDED_DATA_STDERR) != 0) {
            continue;
        }
        const bool want_input = !eof_sent && !input_done && input_at == input_end && !io.produce;
        if (!wait_for(s, io.input_fd, want_input, io.interactive ? next_deadline() : idle_deadline, input_ready)) {
            if (io.interactive) {
                continue; // a quiet terminal is fine; look for a resize and wait again
            }
            return impl.failure(LIBSSH2_ERROR_TIMEOUT, "waiting for a command");
        }
    }
    rc = s.retry([&] { return libssh2().channel_close(ch); }, impl.io_deadline());
    if (rc == 0) {
        rc = s.retry([&] { return libssh2().channel_wait_closed(ch); }, impl.io_deadline());
    }
    if (rc != 0) {
        return impl.failure(rc, "closing a channel");
    }
    int status = libssh2().channel_get_exit_status(ch);
    char* signal = nullptr;
    std::size_t signal_len = 0;
    libssh2().channel_get_exit_signal(ch, &signal, &signal_len, nullptr, nullptr, nullptr, nullptr);
    if (signal) {
        const int number = signal_number(std::string_view(signal, signal_len));
        status = number > 0 ? 128 + number : 255;
        libssh2().free(s.raw(), signal);
    }
    return status;
}

} // namespace tandem::net
