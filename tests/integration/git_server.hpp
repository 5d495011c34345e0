#pragma once
// A git repository served by a real `git daemon` on 127.0.0.1, for the git workdir tests (SkyPilot's
// `workdir: {url, ref}`): branch main (version.txt "main"), tag v1 ("v1"), branch feature ("feature").
// Every backend clones it where the job runs: the Slurm testbed's nodes as the test user, the Kubernetes
// node agent's pods. Stopped and removed at the end.

#include <memory>
#include <string>

#include "../cli/run_tandem.hpp"

namespace tandem_test {

class GitServer {
public:
    // Listens on 127.0.0.1 and, when given, on `also` too (the pod network's gateway, which pods reach).
    explicit GitServer(const std::string& also = "");
    ~GitServer();
    GitServer(const GitServer&) = delete;
    GitServer& operator=(const GitServer&) = delete;

    std::string url() const; // git://127.0.0.1:PORT/proj
    std::string url_on(const std::string& host) const; // git://HOST:PORT/proj
    std::string commit_of(const std::string& ref) const;

private:
    std::string m_root;
    int m_port = 0;
    std::unique_ptr<Child> m_daemon;
};

} // namespace tandem_test
