#include "net/plain_http.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/socket.h>

#include "net/plain_http_request.hpp"
#include "net/tcp_socket.hpp"

namespace tandem::net::detail {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t k_max_head = std::size_t{256} * 1024;
constexpr std::size_t k_max_line = std::size_t{8} * 1024; // a chunk-size or trailer line
constexpr std::size_t k_max_error_body = std::size_t{64} * 1024;
constexpr std::size_t k_read_size = std::size_t{64} * 1024;

std::string lowercase(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

class Socket {
public:
    explicit Socket(int fd = -1) : m_fd(fd) {}
    ~Socket() { reset(); }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int get() const { return m_fd; }
    int release() { return std::exchange(m_fd, -1); }
    void reset(int fd = -1) {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = fd;
    }

private:
    int m_fd;
};

struct Connected {
    int fd = -1;
    std::optional<AttemptFailure> failure;
};

Connected open_connection(const PlainUrl& url, const HttpRequest& req, const UrlTarget& t,
                          const std::string& what, Clock::time_point start) {
    TcpDeadline deadline;
    milliseconds limit{0};
    for (const milliseconds m : {req.connect_timeout, req.timeout}) {
        if (m.count() > 0 && (!deadline || start + m < *deadline)) {
            deadline = start + m;
            limit = m;
        }
    }
    auto fd = tcp_connect_until(url.host, url.port, deadline);
    if (fd) {
        return {*fd, std::nullopt};
    }
    switch (fd.error().kind) {
    case TcpFailure::Kind::resolve:
        return {-1, attempt_failure(ErrorKind::unavailable,
                                    fmt::format("cannot reach {} ({}): cannot resolve host '{}': {}",
                                                t.host_port, what, url.host, fd.error().detail),
                                    false)};
    case TcpFailure::Kind::timeout:
        return {-1, attempt_failure(ErrorKind::timeout,
                                    fmt::format("cannot connect to {} ({}) within {} ms", t.host_port, what,
                                                limit.count()),
                                    false)};
    case TcpFailure::Kind::connect:
        break;
    }
    return {-1, attempt_failure(ErrorKind::unavailable,
                                fmt::format("cannot reach {} ({}): connect to {} port {} failed: {}",
                                            t.host_port, what, url.host, url.port, fd.error().detail),
                                false)};
}

// How one exchange on one connection ended.
enum class Outcome {
    done,   // the whole answer was read (or the consumer ended it)
    stale,  // a kept connection was found closed before any answer byte: safe to resend if idempotent
    failed, // `failure` says why
};

// One request and its answer on one connection.
class Exchange {
public:
    Exchange(const HttpRequest& req, const ChunkSink* on_chunk, HttpResponse* head, std::string what,
             std::string host_port, TcpDeadline deadline)
        : m_req(req), m_on_chunk(on_chunk), m_head(head), m_what(std::move(what)),
          m_host_port(std::move(host_port)), m_deadline(deadline) {}

    Outcome run(int fd, const std::string& request_bytes) {
        m_fd = fd;
        if (!send_all(request_bytes)) {
            return m_outcome;
        }
        if (!read_head() || !read_body()) {
            return m_outcome;
        }
        return Outcome::done;
    }

    HttpResponse response;
    std::string reason;
    std::string error_body;
    bool keep_alive = false;
    bool consumer_stopped = false;
    bool data_delivered = false;
    std::string consumer_error;
    std::optional<AttemptFailure> fault;

    void publish_head() {
        if (m_head != nullptr && !m_head_published) {
            m_head->status = response.status;
            m_head->headers = response.headers;
            m_head->body.clear();
        }
        m_head_published = true;
    }

private:
    bool fail(ErrorKind kind, std::string message) {
        fault = attempt_failure(kind, std::move(message), true, data_delivered);
        m_outcome = Outcome::failed;
        return false;
    }
    bool broke(std::string_view detail) {
        return fail(ErrorKind::unavailable,
                    fmt::format("connection to {} broke during {}: {}", m_host_port, m_what, detail));
    }
    bool timed_out() {
        return fail(ErrorKind::timeout, fmt::format("{} did not answer {} within {} ms", m_host_port, m_what,
                                                    m_req.timeout.count()));
    }
    bool too_large(std::optional<std::uint64_t> announced) {
        keep_alive = false;
        fault = body_too_large(m_req, announced);
        m_outcome = Outcome::failed;
        return false;
    }
    // An error answer's body only makes its message: past the first 64 KiB the rest is not read (the
    // connection is dropped with it), so a server cannot hold tandem reading an endless error page.
    bool error_body_full() {
        keep_alive = false;
        m_outcome = Outcome::done;
        return false;
    }
    bool unreadable(std::string_view detail) {
        keep_alive = false;
        return fail(ErrorKind::remote,
                    fmt::format("{} sent an unreadable answer to {}: {}", m_host_port, m_what, detail));
    }

    // The connection died before any byte of an answer: `stale`, so the caller may send an idempotent
    // request again on a fresh connection when this one was a kept one.
    bool unanswered(std::string_view detail) {
        broke(detail);
        m_outcome = Outcome::stale;
        return false;
    }
    // Waits until the socket is ready for `events`; false (the failure recorded) on the deadline or an error.
    bool await_ready(short events) {
        const int ready = wait_for_fd(m_fd, events, m_deadline);
        if (ready == 0) {
            return timed_out();
        }
        if (ready < 0) {
            return broke(std::strerror(errno));
        }
        return true;
    }

    bool send_all(std::string_view data) {
        while (!data.empty()) {
            const ssize_t n = ::send(m_fd, data.data(), data.size(), MSG_NOSIGNAL);
            if (n > 0) {
                data.remove_prefix(static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!await_ready(POLLOUT)) {
                    return false;
                }
                continue;
            }
            const int error = errno;
            return m_received_any ? broke(std::strerror(error)) : unanswered(std::strerror(error));
        }
        return true;
    }

    // Appends what arrives to m_in. false: failed, or the peer closed (m_closed) when allow_close.
    bool receive(bool allow_close) {
        for (;;) {
            const std::size_t old = m_in.size();
            m_in.resize(old + k_read_size);
            const ssize_t n = ::recv(m_fd, m_in.data() + old, k_read_size, 0);
            m_in.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
            if (n > 0) {
                m_received_any = true;
                return true;
            }
            if (n == 0) {
                m_closed = true;
                if (allow_close) {
                    return false;
                }
                return m_received_any ? broke("the answer ended early")
                                      : unanswered("the server closed the connection without an answer");
            }
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!await_ready(POLLIN)) {
                    return false;
                }
                continue;
            }
            const int error = errno;
            return !m_received_any && error == ECONNRESET ? unanswered(std::strerror(error))
                                                          : broke(std::strerror(error));
        }
    }

    // The end of the head at the front of m_in (past its blank line), or npos.
    static std::size_t head_end(std::string_view in) {
        const auto crlf = in.find("\n\r\n");
        const auto lf = in.find("\n\n");
        if (crlf == std::string_view::npos && lf == std::string_view::npos) {
            return std::string_view::npos;
        }
        return crlf < lf ? crlf + 3 : lf + 2;
    }

    bool parse_head(std::string_view text) {
        response.headers.clear();
        bool first = true;
        while (!text.empty()) {
            const auto nl = text.find('\n');
            std::string_view line = text.substr(0, nl);
            text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
            if (!line.empty() && line.back() == '\r') {
                line.remove_suffix(1);
            }
            if (first) {
                first = false;
                const auto sp = line.find(' ');
                if (!line.starts_with("HTTP/1.") || sp == std::string_view::npos || line.size() < sp + 4 ||
                    !std::all_of(line.begin() + static_cast<std::ptrdiff_t>(sp) + 1,
                                 line.begin() + static_cast<std::ptrdiff_t>(sp) + 4,
                                 [](char c) { return c >= '0' && c <= '9'; })) {
                    return unreadable("not an HTTP/1.x status line");
                }
                m_http10 = line.starts_with("HTTP/1.0");
                response.status = std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
                reason = std::string(trim_header_value(line.size() > sp + 4 ? line.substr(sp + 4) : ""));
            } else if (!line.empty() && (line.front() == ' ' || line.front() == '\t') &&
                       !response.headers.empty()) {
                response.headers.back().second += fmt::format(" {}", trim_header_value(line));
            } else if (const auto colon = line.find(':'); colon != std::string_view::npos && colon > 0) {
                response.headers.emplace_back(lowercase(trim_header_value(line.substr(0, colon))),
                                              std::string(trim_header_value(line.substr(colon + 1))));
            }
        }
        return true;
    }

    bool read_head() {
        for (;;) {
            const std::size_t end = head_end(m_in);
            if (end == std::string_view::npos) {
                if (m_in.size() > k_max_head) {
                    return unreadable("a response head over 256 KB");
                }
                if (!receive(false)) {
                    return false;
                }
                continue;
            }
            const bool ok = parse_head(std::string_view(m_in).substr(0, end));
            m_in.erase(0, end);
            if (!ok) {
                return false;
            }
            if (response.status >= 100 && response.status < 200 && response.status != 101) {
                continue; // 100 Continue, 103 Early Hints: the real answer follows
            }
            return true;
        }
    }

    bool take_body(std::string_view piece) {
        if (piece.empty()) {
            return true;
        }
        if (!deliverable(response.status, m_req.pass_statuses)) {
            std::string& kept = m_on_chunk == nullptr ? response.body : error_body;
            const std::size_t room = k_max_error_body - std::min(k_max_error_body, kept.size());
            kept.append(piece.substr(0, std::min(piece.size(), room)));
            return piece.size() <= room || error_body_full();
        }
        if (m_on_chunk == nullptr) {
            if (body_over_limit(m_req, response.body.size() + piece.size())) {
                return too_large(std::nullopt);
            }
            response.body.append(piece);
            return true;
        }
        publish_head();
        data_delivered = true;
        try {
            if (!(*m_on_chunk)(piece)) {
                consumer_stopped = true;
            }
        } catch (const std::exception& e) {
            consumer_error = e.what();
        } catch (...) {
            consumer_error = "unknown exception";
        }
        if (consumer_stopped || !consumer_error.empty()) {
            keep_alive = false;
            m_outcome = Outcome::done;
            return false;
        }
        return true;
    }

    bool read_body() {
        const auto connection = response.header("connection");
        keep_alive = m_http10 ? (connection && has_token(*connection, "keep-alive"))
                              : !(connection && has_token(*connection, "close"));
        if (m_req.method == "HEAD" || response.status == 204 || response.status == 304 ||
            response.status == 101) {
            keep_alive = keep_alive && response.status != 101 && m_in.empty();
            return true;
        }
        if (const auto te = response.header("transfer-encoding"); te && has_token(*te, "chunked")) {
            return read_chunked();
        }
        if (const auto cl = response.header("content-length")) {
            std::uint64_t length = 0;
            const auto [ptr, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), length);
            if (ec != std::errc() || ptr != cl->data() + cl->size()) {
                return unreadable(fmt::format("Content-Length '{}'", *cl));
            }
            if (m_on_chunk == nullptr && !deliverable(response.status, m_req.pass_statuses)) {
                response.body.reserve(std::min<std::uint64_t>(length, k_max_error_body));
            } else if (m_on_chunk == nullptr) {
                if (body_over_limit(m_req, 0, length)) {
                    return too_large(length); // refused before a byte of it is read
                }
                response.body.reserve(length);
            }
            return read_length(length);
        }
        keep_alive = false; // the body ends when the server closes the connection
        for (;;) {
            if (!take_body(m_in)) {
                return false;
            }
            m_in.clear();
            if (!receive(true)) {
                return m_closed && !fault;
            }
        }
    }

    bool read_length(std::uint64_t left) {
        for (;;) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, m_in.size()));
            if (!take_body(std::string_view(m_in).substr(0, n))) {
                return false;
            }
            left -= n;
            if (left == 0) {
                keep_alive = keep_alive && m_in.size() == n; // anything more is not ours to leave behind
                return true;
            }
            m_in.clear();
            if (!receive(true)) {
                return m_closed && !fault ? broke("the answer ended early") : false;
            }
        }
    }

    // Chunked transfer coding: size line, data, CRLF, ..., a 0 size line, trailers, blank line. `pos` walks
    // m_in; what it passed is dropped only before the next read, so many small chunks cost no copying.
    bool read_chunked() {
        enum class State { size, data, data_end, trailer } state = State::size;
        std::uint64_t left = 0;
        std::size_t pos = 0;
        for (;;) {
            for (;;) {
                const std::string_view rest = std::string_view(m_in).substr(pos);
                if (state == State::data) {
                    if (rest.empty()) {
                        break;
                    }
                    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, rest.size()));
                    if (!take_body(rest.substr(0, n))) {
                        return false;
                    }
                    pos += n;
                    left -= n;
                    state = left == 0 ? State::data_end : State::data;
                    continue;
                }
                const auto nl = rest.find('\n');
                if (nl == std::string_view::npos) {
                    if (rest.size() > k_max_line) {
                        return unreadable("a chunk line over 8 KB");
                    }
                    break;
                }
                std::string_view line = rest.substr(0, nl);
                if (!line.empty() && line.back() == '\r') {
                    line.remove_suffix(1);
                }
                pos += nl + 1;
                if (state == State::data_end) {
                    if (!line.empty()) {
                        return unreadable("chunk data longer than its size");
                    }
                    state = State::size;
                } else if (state == State::size) {
                    const std::string_view digits = trim_header_value(line.substr(0, line.find(';')));
                    std::uint64_t size = 0;
                    const auto [ptr, ec] =
                        std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
                    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) {
                        return unreadable("a bad chunk size");
                    }
                    state = size == 0 ? State::trailer : State::data;
                    left = size;
                } else if (line.empty()) { // the blank line after the trailers: the end
                    keep_alive = keep_alive && pos == m_in.size();
                    return true;
                }
            }
            m_in.erase(0, pos);
            pos = 0;
            if (!receive(true)) {
                return m_closed && !fault ? broke("the answer ended early") : false;
            }
        }
    }

    const HttpRequest& m_req;
    const ChunkSink* m_on_chunk;
    HttpResponse* m_head;
    std::string m_what;
    std::string m_host_port;
    TcpDeadline m_deadline;
    int m_fd = -1;
    std::string m_in;
    bool m_received_any = false;
    bool m_closed = false;
    bool m_http10 = false;
    bool m_head_published = false;
    Outcome m_outcome = Outcome::failed;
};

} // namespace

AttemptResult perform_plain_attempt(PlainConnections& connections, const HttpRequest& request,
                                    const ChunkSink* on_chunk, HttpResponse* head,
                                    const std::vector<std::string>& secrets) {
    AttemptResult result;
    const auto start = Clock::now();
    auto finish = [&] {
        result.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        return std::move(result);
    };
    const UrlTarget t = parse_target(request.url);
    const std::string what = fmt::format("{} {}", request.method, t.path);
    if (auto name = malformed_header(request)) {
        result.failure =
            attempt_failure(ErrorKind::config,
                            fmt::format("header '{}' for {} is malformed (empty name, colon or line break)",
                                        *name, t.host_port),
                            false);
        return finish();
    }
    const auto url = split_url(request.url);
    if (!url) {
        result.failure =
            attempt_failure(ErrorKind::config, fmt::format("bad URL for {}", t.host_port), false);
        return finish();
    }
    const std::string bytes = render_request(request, *url);
    const TcpDeadline deadline =
        request.timeout.count() > 0 ? std::optional(start + request.timeout) : std::nullopt;

    // A request that must not be repeated never rides a kept connection: one that died unseen would
    // leave it unknown whether the server acted on it.
    for (bool may_reuse = request.idempotent;; may_reuse = false) {
        Socket socket(may_reuse ? connections.take(t.host_port) : -1);
        const bool reused = socket.get() >= 0;
        if (!reused) {
            Connected c = open_connection(*url, request, t, what, start);
            if (c.failure) {
                result.failure = std::move(c.failure);
                return finish();
            }
            socket.reset(c.fd);
            ++result.new_connections;
        }
        Exchange ex(request, on_chunk, head, what, t.host_port, deadline);
        const Outcome outcome = ex.run(socket.get(), bytes);
        if (outcome == Outcome::stale && reused) {
            continue; // the server had closed the kept connection: the request never reached it
        }
        if (head != nullptr && ex.response.status != 0) {
            ex.publish_head();
        }
        if (!ex.consumer_error.empty()) {
            result.failure = attempt_failure(
                ErrorKind::internal,
                fmt::format("the consumer of a stream from {} failed: {}", t.host_port, ex.consumer_error),
                true, true);
        } else if (ex.consumer_stopped) {
            // A clean end chosen by the consumer; the connection is dropped with the rest of the answer.
        } else if (outcome != Outcome::done) {
            result.failure = std::move(ex.fault);
            if (result.failure) {
                result.failure->data_delivered = ex.data_delivered;
            }
        } else if (!deliverable(ex.response.status, request.pass_statuses)) {
            const std::string& body = on_chunk != nullptr ? ex.error_body : ex.response.body;
            result.failure = refused_status(request, ex.response, ex.reason, body, secrets);
        }
        if (outcome == Outcome::done && ex.keep_alive && !ex.consumer_stopped && ex.consumer_error.empty()) {
            connections.give(t.host_port, socket.release());
        }
        result.response = std::move(ex.response);
        return finish();
    }
}

} // namespace tandem::net::detail
