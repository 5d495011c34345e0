#include "test_server.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <poll.h>
#include <stdexcept>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace tandem::net::testing {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

// Reads one request (head + Content-Length body) from fd; `pending` carries bytes read past it.
std::optional<RecordedRequest> read_request(int fd, std::string& pending) {
    char buf[4096];
    auto fill = [&]() {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            return false;
        }
        pending.append(buf, static_cast<std::size_t>(n));
        return true;
    };
    std::size_t head_end;
    while ((head_end = pending.find("\r\n\r\n")) == std::string::npos) {
        if (!fill()) {
            return std::nullopt;
        }
    }
    RecordedRequest req;
    const std::string head = pending.substr(0, head_end);
    std::size_t line_end = head.find("\r\n");
    const std::string request_line = head.substr(0, line_end);
    const auto sp1 = request_line.find(' ');
    const auto sp2 = request_line.find(' ', sp1 + 1);
    req.method = request_line.substr(0, sp1);
    req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t content_length = 0;
    while (line_end != std::string::npos && line_end < head.size()) {
        const std::size_t start = line_end + 2;
        line_end = head.find("\r\n", start);
        const std::string_view line = std::string_view(head).substr(
            start, (line_end == std::string::npos ? head.size() : line_end) - start);
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) {
            continue;
        }
        std::string name = lower(std::string(trim(line.substr(0, colon))));
        std::string value(trim(line.substr(colon + 1)));
        if (name == "content-length") {
            content_length = std::stoul(value);
        }
        req.headers.emplace_back(std::move(name), std::move(value));
    }
    const std::size_t total = head_end + 4 + content_length;
    while (pending.size() < total) {
        if (!fill()) {
            return std::nullopt;
        }
    }
    req.body = pending.substr(head_end + 4, content_length);
    req.raw = pending.substr(0, total);
    pending.erase(0, total);
    return req;
}

std::string status_line(int status) {
    const char* reason = status == 200   ? "OK"
                         : status == 401 ? "Unauthorized"
                         : status == 404 ? "Not Found"
                         : status == 429 ? "Too Many Requests"
                         : status == 500 ? "Internal Server Error"
                         : status == 503 ? "Service Unavailable"
                                         : "Scripted";
    return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
}

} // namespace

std::optional<std::string> RecordedRequest::header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
        if (name == lower_name) {
            return value;
        }
    }
    return std::nullopt;
}

bool Connection::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(m_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

void Connection::wait_for_close(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[512];
    while (!m_stopping && std::chrono::steady_clock::now() < deadline) {
        pollfd p{m_fd, POLLIN, 0};
        if (::poll(&p, 1, 20) > 0 && ::recv(m_fd, buf, sizeof buf, 0) <= 0) {
            break;
        }
    }
    m_close = true;
}

TestServer::TestServer() {
    m_listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (m_listen_fd < 0 || ::bind(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(m_listen_fd, 16) != 0 ||
        ::getsockname(m_listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        throw std::runtime_error("test server: cannot listen on 127.0.0.1");
    }
    m_port = ntohs(addr.sin_port);
    m_acceptor = std::thread([this] { accept_loop(); });
}

TestServer::~TestServer() {
    m_stopping = true;
    ::shutdown(m_listen_fd, SHUT_RDWR); // wakes accept()
    m_acceptor.join();
    {
        std::lock_guard lock(m_mutex);
        for (int fd : m_client_fds) {
            ::shutdown(fd, SHUT_RDWR); // wakes recv() in the workers
        }
    }
    for (auto& worker : m_workers) {
        worker.join();
    }
    for (int fd : m_client_fds) {
        ::close(fd);
    }
    ::close(m_listen_fd);
}

std::string TestServer::url(std::string_view path_and_query) const {
    return "http://" + host_port() + std::string(path_and_query);
}

void TestServer::then(Responder responder) {
    std::lock_guard lock(m_mutex);
    m_script.push_back(std::move(responder));
}

std::vector<RecordedRequest> TestServer::requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
}

Responder TestServer::next_responder() {
    std::lock_guard lock(m_mutex);
    if (m_next < m_script.size()) {
        return m_script[m_next++];
    }
    return reply(500, "unscripted request");
}

void TestServer::accept_loop() {
    while (!m_stopping) {
        const int fd = ::accept(m_listen_fd, nullptr, nullptr);
        if (fd < 0) {
            continue; // woken by shutdown, or a transient error
        }
        const int number = ++m_accepted;
        std::lock_guard lock(m_mutex);
        m_client_fds.push_back(fd);
        m_workers.emplace_back([this, fd, number] { serve(fd, number); });
    }
}

void TestServer::serve(int fd, int number) {
    std::string pending;
    Connection conn(fd, m_stopping);
    while (!m_stopping && !conn.closing()) {
        auto req = read_request(fd, pending);
        if (!req) {
            break;
        }
        req->connection = number;
        {
            std::lock_guard lock(m_mutex);
            m_requests.push_back(*req);
        }
        next_responder()(conn, *req);
    }
    ::shutdown(fd, SHUT_RDWR); // closed by the destructor, after every worker has finished with it
}

Responder reply(int status, std::string body, Headers headers) {
    return [status, body = std::move(body), headers = std::move(headers)](Connection& conn,
                                                                          const RecordedRequest&) {
        std::string out = status_line(status);
        for (const auto& [name, value] : headers) {
            out.append(name).append(": ").append(value).append("\r\n");
        }
        out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        conn.send(out);
    };
}

Responder never_answer() {
    return [](Connection& conn, const RecordedRequest&) { conn.wait_for_close(); };
}

std::string chunked_head(int status) {
    return status_line(status) + "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
}

std::string chunk(std::string_view payload) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
    return std::string(size) + std::string(payload) + "\r\n";
}

} // namespace tandem::net::testing
