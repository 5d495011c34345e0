#pragma once
// The two servers of the backend-fault scenarios (test_backend_faults.cpp), answering well: a slurmrestd
// (v0.0.38) and a Kubernetes API server (v1.20), each just good enough for `launch` and `status` (fixtures
// from tests/fixtures for discovery and inventory; submitted jobs kept and shown RUNNING). And `Rig`, one
// scenario's world: a throwaway home whose config.yaml names one cluster served by a FaultServer, which
// answers through the fake until the scenario turns it bad.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fault_server.hpp"
#include "run_tandem.hpp"

namespace tandem_test {

class FakeSlurm {
public:
    // Records a submit as slurmctld would (RUNNING, its comment kept) and returns the job id.
    int accept_submit(const std::string& body);
    static std::string submit_answer(int id);
    std::size_t jobs() const;
    std::string jobs_body() const; // GET /slurm/v0.0.38/jobs
    void handle(FaultConnection& c, const FaultRequest& r);

private:
    mutable std::mutex m_mutex;
    std::vector<nlohmann::json> m_jobs;
    int m_next = 100;
};

class FakeKube {
public:
    static constexpr const char* k_ns = "default";

    // Creates a Job as the API server would: 201 with the object, or 409 when the name is taken (so a
    // create sent twice makes one Job, as on a real server).
    std::pair<int, nlohmann::json> create_job(const std::string& body);
    std::optional<nlohmann::json> job_named(const std::string& name) const;
    std::size_t jobs() const;
    std::string pods_body() const; // one Running pod per Job
    // The Jobs, or those whose label matches `selector` ("key=value", as labelSelector sends it).
    std::string jobs_body(const std::string& selector = {}) const;
    void handle(FaultConnection& c, const FaultRequest& r);

private:
    mutable std::mutex m_mutex;
    std::vector<nlohmann::json> m_jobs;
    int m_created = 0;
};

enum class Backend { slurm, k8s };

// id -> (state, remote id), as `status --all --json --no-refresh` shows the store.
using Store = std::map<int, std::pair<std::string, std::string>>;

class Rig {
public:
    // timeout_seconds of the cluster; its deadline is 2 x that + 5 s. Slurm goes through tandem's own
    // HTTP/1.1 exchange; the Kubernetes server URL carries user info, which sends it through libcurl.
    explicit Rig(Backend backend, int timeout_seconds = 2);

    std::string cluster;
    std::string list_path;   // what `status` reads
    std::string submit_path; // what `launch` POSTs
    std::string task;        // a task file: sleep 600

    FaultServer& server() { return m_server; }
    Backend backend() const { return m_backend; }
    FakeSlurm& slurm() { return m_slurm; }
    FakeKube& kube() { return m_kube; }
    std::size_t remote_jobs() const; // jobs the fake holds
    std::chrono::milliseconds deadline() const { return std::chrono::seconds(2 * m_timeout + 5); }
    std::chrono::milliseconds timeout() const { return std::chrono::seconds(m_timeout); }

    // tandem in this home, with no proxy from the environment (the transports must be the ones above).
    RunResult tandem(const std::vector<std::string>& args) const;

    void heal();
    // Requests `which` selects get `bad`; the others the healthy answer.
    void misbehave(std::function<bool(const FaultRequest&)> which, FaultHandler bad);
    void misbehave(FaultHandler bad);
    bool is_list(const FaultRequest& r) const { return r.method == "GET" && r.path() == list_path; }
    bool is_submit(const FaultRequest& r) const { return r.method == "POST" && r.path() == submit_path; }

    // The healthy answer to the list `status` reads, and the list's key ("jobs", "items").
    std::string list_answer() const;
    std::string list_key() const;
    // The healthy answer to a submit, with the job made on the fake: (status, body).
    std::pair<int, std::string> take_submit(const FaultRequest& r);

    // `launch -d` against the healthy server; REQUIREs the job RUNNING with a remote id.
    int launch_running();
    nlohmann::json job_json(int id, bool refresh) const;
    Store store() const;

private:
    void healthy_answer(FaultConnection& c, const FaultRequest& r);

    Backend m_backend;
    int m_timeout;
    TempHome m_t;
    FakeSlurm m_slurm;
    FakeKube m_kube;
    FaultServer m_server; // last: destroyed first, so no handler runs on a destroyed fake
};

} // namespace tandem_test
