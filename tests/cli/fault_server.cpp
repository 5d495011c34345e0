#include "fault_server.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <poll.h>
#include <stdexcept>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace tandem_test {

namespace {

// Waits up to 100 ms for `events`; the callers loop, so a stopping server is noticed soon.
int wait_ready(int fd, short events) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, 100);
}

// Reads one request (head and Content-Length body); false when the peer closed or the server stops.
bool read_request(int fd, std::string& pending, FaultRequest& req, const std::atomic<bool>& stopping) {
    auto fill = [&]() {
        while (!stopping.load()) {
            const int ready = wait_ready(fd, POLLIN);
            if (ready < 0 && errno != EINTR) {
                return false;
            }
            if (ready <= 0) {
                continue;
            }
            char buf[16384];
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) {
                return false;
            }
            pending.append(buf, static_cast<std::size_t>(n));
            return true;
        }
        return false;
    };
    std::size_t head_end;
    while ((head_end = pending.find("\r\n\r\n")) == std::string::npos) {
        if (!fill()) {
            return false;
        }
    }
    std::string head = pending.substr(0, head_end);
    const auto line_end = head.find("\r\n");
    const std::string request_line = head.substr(0, line_end);
    const auto sp1 = request_line.find(' ');
    const auto sp2 = request_line.find(' ', sp1 + 1);
    req.method = request_line.substr(0, sp1);
    req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::transform(head.begin(), head.end(), head.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    std::size_t length = 0;
    if (const auto at = head.find("\r\ncontent-length:"); at != std::string::npos) {
        length = std::stoul(head.substr(at + 17));
    }
    const std::size_t total = head_end + 4 + length;
    while (pending.size() < total) {
        if (!fill()) {
            return false;
        }
    }
    req.body = pending.substr(head_end + 4, length);
    req.at = std::chrono::steady_clock::now();
    pending.erase(0, total);
    return true;
}

std::string head_bytes(int status, const FaultHeaders& headers) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
    for (const auto& [name, value] : headers) {
        out += name + ": " + value + "\r\n";
    }
    return out;
}

} // namespace

bool FaultConnection::send(std::string_view bytes) {
    while (!bytes.empty()) {
        if (m_stopping.load()) {
            return false;
        }
        const int ready = wait_ready(m_fd, POLLOUT);
        if (ready < 0 && errno != EINTR) {
            return false;
        }
        if (ready <= 0) {
            continue;
        }
        const ssize_t n = ::send(m_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

void FaultConnection::hold() {
    while (!m_stopping.load()) {
        const int ready = wait_ready(m_fd, POLLIN);
        if (ready < 0 && errno != EINTR) {
            return;
        }
        if (ready > 0) {
            char buf[4096];
            if (::recv(m_fd, buf, sizeof buf, 0) <= 0) {
                return; // the client gave up
            }
        }
    }
}

FaultServer::FaultServer(FaultHandler handler) : m_handler(std::move(handler)) {
    m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_listen < 0) {
        throw std::runtime_error("socket failed");
    }
    const int one = 1;
    ::setsockopt(m_listen, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listen, 64) != 0) {
        ::close(m_listen);
        throw std::runtime_error("bind/listen failed");
    }
    socklen_t len = sizeof addr;
    ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len);
    m_port = ntohs(addr.sin_port);
    m_acceptor = std::thread([this] { accept_loop(); });
}

FaultServer::~FaultServer() {
    m_stopping = true;
    ::shutdown(m_listen, SHUT_RDWR);
    {
        std::lock_guard lock(m_mutex);
        for (int fd : m_fds) {
            ::shutdown(fd, SHUT_RDWR);
        }
    }
    if (m_acceptor.joinable()) {
        m_acceptor.join();
    }
    std::vector<std::thread> workers;
    {
        std::lock_guard lock(m_mutex);
        workers.swap(m_workers);
    }
    for (auto& t : workers) {
        t.join();
    }
    ::close(m_listen);
}

void FaultServer::accept_loop() {
    while (!m_stopping.load()) {
        const int ready = wait_ready(m_listen, POLLIN);
        if (ready <= 0) {
            continue;
        }
        const int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        ++m_accepted;
        std::lock_guard lock(m_mutex);
        if (m_stopping.load()) {
            ::close(fd);
            return;
        }
        m_fds.push_back(fd);
        m_workers.emplace_back([this, fd] { serve(fd); });
    }
}

void FaultServer::serve(int fd) {
    std::string pending;
    for (;;) {
        FaultRequest req;
        if (!read_request(fd, pending, req, m_stopping)) {
            break;
        }
        FaultHandler handler;
        {
            std::lock_guard lock(m_mutex);
            m_requests.push_back(req);
            handler = m_handler;
        }
        FaultConnection c(fd, m_stopping);
        handler(c, req);
        if (c.closing() || m_stopping.load()) {
            break;
        }
    }
    // Closed here, not in the destructor: the descriptor number must not be reused while listed.
    std::lock_guard lock(m_mutex);
    m_fds.erase(std::remove(m_fds.begin(), m_fds.end(), fd), m_fds.end());
    ::close(fd);
}

void FaultServer::set_handler(FaultHandler handler) {
    std::lock_guard lock(m_mutex);
    m_handler = std::move(handler);
}

std::vector<FaultRequest> FaultServer::requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
}

void FaultServer::clear_requests() {
    std::lock_guard lock(m_mutex);
    m_requests.clear();
}

std::size_t FaultServer::count(std::string_view method, std::string_view path_prefix) const {
    std::lock_guard lock(m_mutex);
    return static_cast<std::size_t>(std::count_if(m_requests.begin(), m_requests.end(), [&](const auto& r) {
        return (method.empty() || r.method == method) && r.target.rfind(path_prefix, 0) == 0;
    }));
}

std::string FaultServer::transcript() const {
    std::lock_guard lock(m_mutex);
    std::string out;
    for (const auto& r : m_requests) {
        out += r.line() + "\n";
    }
    return out;
}

std::string reason_phrase(int status) {
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 404:
        return "Not Found";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    default:
        return "Scripted";
    }
}

std::string answer_bytes(int status, std::string_view body, const FaultHeaders& headers) {
    FaultHeaders all = headers;
    all.emplace_back("Content-Length", std::to_string(body.size()));
    return head_bytes(status, all) + "\r\n" + std::string(body);
}

void reply(FaultConnection& c, int status, std::string_view body, const FaultHeaders& headers,
           std::string_view content_type) {
    FaultHeaders all = headers;
    if (!content_type.empty()) {
        all.emplace_back("Content-Type", std::string(content_type));
    }
    if (c.closing()) {
        all.emplace_back("Connection", "close");
    }
    c.send(answer_bytes(status, body, all));
}

void never_answer(FaultConnection& c) {
    c.hold();
    c.close_after();
}

void cut_body(FaultConnection& c, int status, std::string_view body, std::size_t claimed) {
    c.send(head_bytes(status,
                      {{"Content-Type", "application/json"}, {"Content-Length", std::to_string(claimed)}}) +
           "\r\n" + std::string(body));
    c.close_after();
}

std::uint64_t huge_body(FaultConnection& c, std::uint64_t bytes, std::string_view list_key, bool announced) {
    c.close_after();
    FaultHeaders headers{{"Content-Type", "application/json"}};
    headers.emplace_back(announced ? "Content-Length" : "Connection",
                         announced ? std::to_string(bytes) : "close");
    if (!c.send(head_bytes(200, headers) + "\r\n")) {
        return 0;
    }
    std::string piece = "{\"" + std::string(list_key) + "\":[";
    const std::string item = "{\"job_id\":1,\"name\":\"filler\",\"job_state\":\"RUNNING\",\"metadata\":{}},";
    while (piece.size() < 256 * 1024) {
        piece += item;
    }
    std::uint64_t sent = 0;
    bool first = true;
    while (sent < bytes) {
        std::string_view chunk = piece;
        if (!first) {
            chunk.remove_prefix(list_key.size() + 5); // only the opening once
        }
        first = false;
        chunk =
            chunk.substr(0, static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), bytes - sent)));
        if (!c.send(chunk)) {
            break;
        }
        sent += chunk.size();
    }
    return sent;
}

std::size_t slowloris(FaultConnection& c, std::string_view answer, std::chrono::milliseconds interval) {
    c.close_after();
    std::size_t sent = 0;
    for (char ch : answer) {
        if (!c.send(std::string_view(&ch, 1))) {
            break;
        }
        ++sent;
        for (auto waited = 0ms; waited < interval && !c.stopping(); waited += 10ms) {
            std::this_thread::sleep_for(10ms);
        }
    }
    return sent;
}

} // namespace tandem_test
