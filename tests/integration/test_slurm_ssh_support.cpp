#include "test_slurm_ssh_support.hpp"

#include <csignal>
#include <cstring>
#include <poll.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

namespace tandem_test {

SshLab::SshLab(const SshTargetOverrides& o) {
    configure(o);
    options.env = home.base_env();
    options.env["SSH_AUTH_SOCK"] = std::nullopt; // only the configured key, never a developer's agent
}

void SshLab::configure(const SshTargetOverrides& o) const {
    const auto& env = slurm_env();
    home.write_config(
        "clusters:\n"
        "  - name: lab\n"
        "    type: slurm\n"
        "    discover_jobs: false\n"
        "    ssh:\n"
        "      host: " +
        env.at("SLURM_SSH_HOST") + "\n      port: \"" + (o.port.empty() ? env.at("SLURM_SSH_PORT") : o.port) +
        "\"\n      user: " + env.at("SLURM_SSH_USER") +
        "\n      identity_file: " + (o.identity_file.empty() ? env.at("SLURM_SSH_KEY") : o.identity_file) +
        "\n      known_hosts: " + (o.known_hosts.empty() ? env.at("SLURM_SSH_KNOWN_HOSTS") : o.known_hosts) +
        "\n    home: " + env.at("SLURM_USER_HOME") + "\n" + o.extra);
}

RunResult SshLab::tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const {
    RunOptions o = options;
    o.timeout = timeout;
    return home.tandem(args, o);
}

nlohmann::json SshLab::job(int id) const {
    auto r = tandem({"status", std::to_string(id), "--json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["jobs"].size() == 1);
    return j["jobs"][0];
}

nlohmann::json SshLab::wait_terminal(int id, std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < deadline) {
        j = job(id);
        if (is_terminal_state(j["state"].get<std::string>())) {
            return j;
        }
        std::this_thread::sleep_for(500ms);
    }
    return j;
}

nlohmann::json SshLab::wait_state(int id, const std::string& state, std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < deadline) {
        j = job(id);
        if (j["state"] == state) {
            return j;
        }
        std::this_thread::sleep_for(300ms);
    }
    return j;
}

std::string SshLab::task(const std::string& name, const std::string& yaml) const {
    return home.write(name + ".yaml", yaml);
}

int launched_id(const RunResult& r) {
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return std::stoi(r.out);
}

StreamingTandem::StreamingTandem(const SshLab& lab, const std::vector<std::string>& args) {
    int out[2], err[2];
    REQUIRE(::pipe(out) == 0);
    REQUIRE(::pipe(err) == 0);
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string kv = *e;
        const auto key = kv.substr(0, kv.find('='));
        if (lab.options.env.count(key) == 0U) {
            env_text.push_back(kv);
        }
    }
    for (const auto& [k, v] : lab.options.env) {
        if (v) {
            env_text.push_back(k + "=" + *v);
        }
    }
    m_pid = ::fork();
    if (m_pid == 0) {
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::close(out[0]);
        ::close(err[0]);
        if (::chdir(lab.home.root().c_str()) != 0) {
            _exit(126);
        }
        std::vector<std::string> argv{tandem_bin()};
        argv.insert(argv.end(), args.begin(), args.end());
        std::vector<char*> cargv, cenv;
        for (auto& a : argv) {
            cargv.push_back(a.data());
        }
        cargv.push_back(nullptr);
        for (auto& e : env_text) {
            cenv.push_back(e.data());
        }
        cenv.push_back(nullptr);
        ::execve(cargv[0], cargv.data(), cenv.data());
        _exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    m_out_thread = std::thread([this, fd = out[0]] { pump(fd, true); });
    m_err_thread = std::thread([this, fd = err[0]] { pump(fd, false); });
}

void StreamingTandem::pump(int fd, bool is_out) {
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!is_out) {
            m_err.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        const auto now = std::chrono::steady_clock::now();
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] == '\n') {
                m_lines.push_back(TimedLine{m_partial, now});
                m_partial.clear();
            } else {
                m_partial += buf[i];
            }
        }
    }
    ::close(fd);
}

std::optional<TimedLine> StreamingTandem::wait_line(const std::string& needle,
                                                    std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            for (const auto& l : m_lines) {
                if (l.text.find(needle) != std::string::npos) {
                    return l;
                }
            }
        }
        std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
}

int StreamingTandem::wait_exit(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (m_pid > 0) {
        const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
        if (r == m_pid) {
            m_pid = -1;
            if (m_out_thread.joinable()) {
                m_out_thread.join();
            }
            if (m_err_thread.joinable()) {
                m_err_thread.join();
            }
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, &status, 0);
            m_pid = -1;
            return -1;
        }
        std::this_thread::sleep_for(20ms);
    }
    return -1;
}

StreamingTandem::~StreamingTandem() {
    if (m_pid > 0) {
        ::kill(m_pid, SIGKILL);
        int status = 0;
        ::waitpid(m_pid, &status, 0);
    }
    if (m_out_thread.joinable()) {
        m_out_thread.join();
    }
    if (m_err_thread.joinable()) {
        m_err_thread.join();
    }
}

std::string StreamingTandem::all_out() {
    std::lock_guard<std::mutex> lock(m_mutex);
    std::string out;
    for (const auto& l : m_lines) {
        out += l.text + "\n";
    }
    return out + m_partial;
}

std::string StreamingTandem::all_err() {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_err;
}

namespace {

int listen_loopback(int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    return fd;
}

} // namespace

int closed_port() {
    int port = 0;
    const int fd = listen_loopback(port);
    ::close(fd); // bound but never listening, then closed: connections are refused
    return port;
}

CuttableProxy::CuttableProxy(int upstream) : m_upstream(upstream) {
    m_listen = listen_loopback(m_port);
    REQUIRE(::listen(m_listen, 16) == 0);
    m_acceptor = std::thread([this] { accept_loop(); });
}

void CuttableProxy::accept_loop() {
    while (!m_stop) {
        pollfd p{m_listen, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
            continue;
        }
        const int client = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) {
            continue;
        }
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<std::uint16_t>(m_upstream));
        if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            ::close(client);
            ::close(server);
            continue;
        }
        ++m_accepted;
        std::lock_guard<std::mutex> lock(m_mutex);
        m_fds.push_back(client);
        m_fds.push_back(server);
        m_threads.emplace_back([this, client, server] {
            char buf[16384];
            while (!m_stop) {
                pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
                if (::poll(fds, 2, 100) < 0) {
                    break;
                }
                bool done = false;
                for (int i = 0; i < 2 && !done; ++i) {
                    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) == 0) {
                        continue;
                    }
                    const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
                    const int to = i == 0 ? server : client;
                    done = n <= 0 || ::write(to, buf, static_cast<std::size_t>(n)) != n;
                }
                if (done) {
                    break;
                }
            }
            ::shutdown(client, SHUT_RDWR);
            ::shutdown(server, SHUT_RDWR);
        });
    }
}

void CuttableProxy::cut() {
    std::lock_guard<std::mutex> lock(m_mutex);
    for (int fd : m_fds) {
        ::shutdown(fd, SHUT_RDWR);
    }
}

CuttableProxy::~CuttableProxy() {
    m_stop = true;
    cut();
    if (m_acceptor.joinable()) {
        m_acceptor.join();
    }
    for (auto& t : m_threads) {
        t.join();
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    for (int fd : m_fds) {
        ::close(fd);
    }
    ::close(m_listen);
}

} // namespace tandem_test
