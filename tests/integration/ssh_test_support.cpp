#include "ssh_test_support.hpp"

#include <cstdlib>
#include <regex>
#include <unistd.h>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "slurm_testbed.hpp"

using namespace tandem::net;

namespace tandem_test {

const SshTestbed& testbed_ssh() {
    static const SshTestbed tb = [] {
        const auto& env = slurm_env();
        return SshTestbed{env.at("SLURM_SSH_HOST"), env.at("SLURM_SSH_USER"), env.at("SLURM_SSH_KEY"),
                          env.at("SLURM_SSH_KNOWN_HOSTS"), std::stoi(env.at("SLURM_SSH_PORT"))};
    }();
    return tb;
}

EnvVar::EnvVar(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) {
        m_old = old;
    }
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
}
EnvVar::~EnvVar() {
    m_old ? ::setenv(m_name, m_old->c_str(), 1) : ::unsetenv(m_name);
}

SshTarget direct() {
    const auto& tb = testbed_ssh();
    SshTarget t;
    t.host = tb.host;
    t.port = tb.port;
    t.user = tb.user;
    t.identity_file = tb.key;
    t.known_hosts = tb.known_hosts;
    return t;
}

Local::Local() {
    ::mkdir(home.home().c_str(), 0700);
    ::mkdir((home.home() + "/.ssh").c_str(), 0700);
    options.home = home.home();
    options.connect_timeout = std::chrono::seconds(5);
    options.io_timeout = std::chrono::seconds(10);
    options.debug = [this](const std::string& line) { debug.push_back(line); };
}

std::string Local::file(const std::string& relative, const std::string& text, unsigned mode) const {
    auto path = home.write(relative, text);
    ::chmod(path.c_str(), mode);
    return path;
}

bool Local::debug_has(const std::string& part) const {
    for (const auto& line : debug) {
        if (line.find(part) != std::string::npos) {
            return true;
        }
    }
    return false;
}

std::unique_ptr<SshHost> make(const SshTarget& target, const SshOptions& options) {
    auto h = make_ssh_host(target, options);
    INFO((h ? std::string() : h.error().message));
    REQUIRE(h);
    return std::move(*h);
}

ExecResult run_ok(SshHost& host, const std::string& command, std::string_view input) {
    auto r = host.exec(command, input);
    INFO(command << ": " << (r ? std::string() : r.error().message));
    REQUIRE(r);
    return *r;
}

std::string must_run(const std::vector<std::string>& argv, const EnvOverrides& env) {
    auto r = run(argv, with_env(env));
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

std::string testbed_fingerprint() {
    auto out = must_run({"/usr/bin/ssh-keygen", "-lf", testbed_ssh().known_hosts});
    std::smatch m;
    REQUIRE(std::regex_search(out, m, std::regex("SHA256:[A-Za-z0-9+/]+")));
    return m.str();
}

std::string known_hosts_line_for(const std::string& name) {
    auto text = read_file(testbed_ssh().known_hosts);
    REQUIRE(text);
    auto space = text->find(' ');
    return name + text->substr(space);
}

int closed_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

RemoteDir::RemoteDir(SshHost& h) : host(h) {
    auto r = run_ok(h, "mktemp -d \"$HOME/tandem-ssh-it.XXXXXX\"");
    path = r.out.substr(0, r.out.find('\n'));
    REQUIRE(path.find("tandem-ssh-it.") != std::string::npos);
}
RemoteDir::~RemoteDir() {
    (void)host.exec("rm -rf '" + path + "'");
}

} // namespace tandem_test
