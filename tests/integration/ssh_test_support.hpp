#pragma once
// Shared by the SSH transport's integration tests: the testbed's sshd coordinates, a throwaway local HOME
// with an empty ~/.ssh, and small helpers. The testbed must be up (scripts/testbed/slurm up).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../cli/run_tandem.hpp"
#include "net/ssh_host.hpp"

namespace tandem_test {

struct SshTestbed {
    std::string host, user, key, known_hosts;
    int port = 0;
};
const SshTestbed& testbed_ssh();

// Sets or removes an environment variable for one test, and puts it back.
class EnvVar {
public:
    EnvVar(const char* name, const char* value);
    ~EnvVar();
    EnvVar(const EnvVar&) = delete;
    EnvVar& operator=(const EnvVar&) = delete;

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

// The testbed's sshd with its key and known_hosts, nothing from any config.
tandem::net::SshTarget direct();

// A HOME with an empty ~/.ssh (no config, no default keys), short timeouts, debug lines kept.
struct Local {
    TempHome home;
    tandem::net::SshOptions options;
    std::vector<std::string> debug;
    Local();
    Local(const Local&) = delete;
    Local& operator=(const Local&) = delete;
    // Writes root()/relative with `mode`; returns the path.
    std::string file(const std::string& relative, const std::string& text, unsigned mode = 0600) const;
    bool debug_has(const std::string& part) const;
};

std::unique_ptr<tandem::net::SshHost> make(const tandem::net::SshTarget& target,
                                           const tandem::net::SshOptions& options);
tandem::net::ExecResult run_ok(tandem::net::SshHost& host, const std::string& command,
                               std::string_view input = {});
std::string must_run(const std::vector<std::string>& argv, const EnvOverrides& env = {});
std::string testbed_fingerprint(); // as ssh-keygen -l prints it
// The testbed's host key line filed under another name ("[127.0.0.1]:PORT").
std::string known_hosts_line_for(const std::string& name);
int closed_port(); // a loopback port nothing listens on

// A folder in the remote home, removed at the end.
struct RemoteDir {
    tandem::net::SshHost& host;
    std::string path;
    explicit RemoteDir(tandem::net::SshHost& h);
    ~RemoteDir();
    RemoteDir(const RemoteDir&) = delete;
    RemoteDir& operator=(const RemoteDir&) = delete;
};

} // namespace tandem_test
