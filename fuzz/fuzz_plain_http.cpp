// The plain HTTP/1.1 response reader (net/plain_http.cpp, tandem's own client for http:// slurmrestd). It
// reads only from a socket, so the input is written into a socketpair whose end is handed to
// perform_plain_attempt as a kept-alive connection; the writing end is then shut, so the answer ends where
// the input does. Each input is read twice: whole (GET, 404 passed through) and streamed to a consumer that
// stops after a few pieces. An input that closes without a byte makes the attempt reconnect: to 127.0.0.1
// port 1, which refuses. Invariants: a complete 2xx Content-Length answer has exactly that many body
// bytes; nothing hangs past the request's time limit.

#include <charconv>
#include <fcntl.h>
#include <unistd.h>

#include <sys/socket.h>

#include "fuzz_common.hpp"
#include "net/plain_http.hpp"

namespace {

using namespace tandem::net;

constexpr const char* k_host_port = "127.0.0.1:1";

// The reading end of a socketpair already holding `input` and shut for writing after it; -1 on failure.
int answer_socket(std::string_view input, int& writer) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return -1;
    }
    const int buffer = 1 << 20;
    ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    ::fcntl(sv[1], F_SETFL, O_NONBLOCK);
    while (!input.empty()) {
        const ssize_t n = ::send(sv[1], input.data(), input.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            break; // the buffer is full: the answer is what fit
        }
        input.remove_prefix(static_cast<std::size_t>(n));
    }
    ::shutdown(sv[1], SHUT_WR);
    writer = sv[1];
    return sv[0];
}

HttpRequest request() {
    HttpRequest req;
    req.url = std::string("http://") + k_host_port + "/slurm/v0.0.40/jobs";
    req.idempotent = true;
    req.timeout = std::chrono::milliseconds(3000);
    req.connect_timeout = std::chrono::milliseconds(500);
    req.pass_statuses = {404};
    return req;
}

void read_whole(std::string_view input) {
    int writer = -1;
    const int fd = answer_socket(input, writer);
    if (fd < 0) {
        return;
    }
    detail::PlainConnections pool;
    pool.give(k_host_port, fd);
    const auto result = detail::perform_plain_attempt(pool, request(), nullptr, nullptr, {});
    ::close(writer);
    const auto& r = result.response;
    if (!result.failure && r.status >= 200 && r.status <= 299 && r.status != 204 &&
        !r.header("transfer-encoding")) {
        if (const auto cl = r.header("content-length")) {
            std::uint64_t length = 0;
            const auto [ptr, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), length);
            if (ec == std::errc() && ptr == cl->data() + cl->size()) {
                fuzz::check(r.body.size() == length, "a Content-Length answer has that many body bytes");
            }
        }
    }
}

void read_streamed(std::string_view input) {
    int writer = -1;
    const int fd = answer_socket(input, writer);
    if (fd < 0) {
        return;
    }
    detail::PlainConnections pool;
    pool.give(k_host_port, fd);
    int pieces = 0;
    std::size_t bytes = 0;
    const ChunkSink sink = [&](std::string_view piece) {
        bytes += piece.size();
        return ++pieces < 4;
    };
    HttpResponse head;
    const auto result = detail::perform_plain_attempt(pool, request(), &sink, &head, {});
    ::close(writer);
    fuzz::check(pieces == 0 || (head.status >= 200 && head.status <= 299) || head.status == 404,
                "only a deliverable answer streams to the consumer");
    (void)result;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto input = fuzz::text(data, size);
    read_whole(input);
    read_streamed(input);
    return 0;
}
