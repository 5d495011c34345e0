#include "git_server.hpp"

#include <filesystem>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace tandem_test {

namespace {

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    ::close(fd);
    return ntohs(addr.sin_port);
}

void git(const std::string& dir, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/git", "-C", dir, "-c", "user.email=t@example.com", "-c",
                                  "user.name=tandem-test"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv, RunOptions{{}, "", 30s, "", {}});
    INFO(r);
    REQUIRE(r.exit_code == 0);
}

} // namespace

GitServer::GitServer(const std::string& also) {
    char pattern[] = "/tmp/tandem-git-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    m_root = pattern;
    std::filesystem::permissions(m_root, std::filesystem::perms::all); // the Slurm test user reads it too
    const std::string repo = m_root + "/proj";
    std::filesystem::create_directories(repo);
    git(repo, {"init", "-q", "-b", "main"});
    auto write = [&](const std::string& text) {
        std::ofstream(repo + "/version.txt") << text << "\n";
        git(repo, {"add", "version.txt"});
        git(repo, {"commit", "-q", "-m", text});
    };
    write("v1");
    git(repo, {"tag", "v1"});
    write("main");
    git(repo, {"checkout", "-q", "-b", "feature"});
    write("feature");
    git(repo, {"checkout", "-q", "main"});
    m_port = free_port();
    std::vector<std::string> argv{"/usr/bin/git", "daemon", "--export-all", "--reuseaddr", "--listen=127.0.0.1"};
    if (!also.empty()) {
        argv.push_back("--listen=" + also);
    }
    argv.insert(argv.end(), {"--port=" + std::to_string(m_port), "--base-path=" + m_root, m_root});
    m_daemon = std::make_unique<Child>(argv, RunOptions{{}, "", 3600s, "", {}});
    // Ready when it answers.
    RunResult probe;
    for (int i = 0; i < 50; ++i) {
        probe = run({"/usr/bin/git", "ls-remote", url()}, RunOptions{{}, "", 10s, "", {}});
        if (probe.exit_code == 0) {
            break;
        }
        std::this_thread::sleep_for(100ms);
    }
    INFO(probe);
    REQUIRE(probe.exit_code == 0);
}

GitServer::~GitServer() {
    m_daemon.reset(); // kills the daemon's process group
    std::error_code ec;
    std::filesystem::remove_all(m_root, ec);
}

std::string GitServer::url() const {
    return url_on("127.0.0.1");
}

std::string GitServer::url_on(const std::string& host) const {
    return "git://" + host + ":" + std::to_string(m_port) + "/proj";
}

std::string GitServer::commit_of(const std::string& ref) const {
    auto r = run({"/usr/bin/git", "-C", m_root + "/proj", "rev-parse", ref + "^{commit}"},
                 RunOptions{{}, "", 10s, "", {}});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return r.out.substr(0, r.out.find('\n'));
}

} // namespace tandem_test
