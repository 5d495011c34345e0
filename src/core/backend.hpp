#pragma once
// The Backend interface every adapter implements. One instance serves one configured cluster for one
// tandem invocation, so it may keep a connection open across calls (one handshake per invocation).

#include <chrono>
#include <cstdint>
#include <functional>

#include <fmt/format.h>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/inventory.hpp"
#include "core/job.hpp"
#include "core/planner.hpp"
#include "core/service.hpp"
#include "core/spec.hpp"

namespace tandem {

struct LogOptions {
    bool follow = false;
    std::optional<int> tail_lines;
    std::optional<int> node; // one rank only; default all
};

// Receives log bytes as they arrive; returning false stops the stream (the reader went away).
using LogSink = std::function<bool(std::string_view)>;

// Receives one update per watched job, in order, each time something may have changed; returning false
// ends the watch.
using WatchSink = std::function<bool(const std::vector<JobUpdate>&)>;

// `tandem exec` / `tandem shell`: a command (empty: the user's login shell) run beside a running job, on
// the node of rank `node`.
struct ExecRequest {
    std::vector<std::string> command;
    int node = 0;
    bool tty = false; // a pseudo-terminal (shell): stdout and stderr come together
};

struct TtySize {
    int columns = 80;
    int rows = 24;
};

// Where an exec's bytes go: `input_fd` (-1: none) is forwarded until its end; `resized` is asked for a
// new terminal size between reads.
struct ExecIo {
    int input_fd = -1;
    std::function<void(std::string_view)> out;
    std::function<void(std::string_view)> err;
    TtySize size;
    std::string term = "xterm";
    std::function<std::optional<TtySize>()> resized;
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual const std::string& cluster() const = 0;
    virtual BackendKind kind() const = 0;

    // Reachable and authorised; the message says what was checked ("bash found, state folder writable").
    virtual Result<std::string> check() = 0;
    // What the cluster offers. With max_age > 0 the backend may answer from its own cache of that age or
    // younger (launch plans on a 30 s old view rather than pay two round trips; plan and infra ask fresh).
    virtual Result<ClusterInventory> inventory(std::chrono::seconds max_age = std::chrono::seconds(0)) = 0;

    // The exact native artifact submit() would create (sbatch script, manifests, local script).
    virtual Result<std::string> render(const TaskSpec& spec, const Placement& placement,
                                       std::int64_t job_id) = 0;
    // Submits; returns the backend's id. `job_id` is tandem's id; `token` (JobRecord::submit_token) marks
    // the job on the cluster, so that a retried submit, or find_submitted() after a killed launch, knows it.
    virtual Result<std::string> submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                       const std::string& token) = 0;
    // After a launch died between recording `job` and storing its remote id: the id of the job this cluster
    // holds for `job.submit_token`, or nullopt when it holds none (a partial submit is taken back and
    // counts as none). An error when the cluster cannot tell.
    virtual Result<std::optional<std::string>> find_submitted(const JobRecord& job) = 0;
    // One update per job, in order, from as few requests as the backend allows (one per cluster).
    // A backend that cannot be reached returns the error; the caller marks the jobs UNKNOWN.
    virtual Result<std::vector<JobUpdate>> refresh(const std::vector<JobRecord>& jobs) = 0;
    virtual Status cancel(const JobRecord& job) = 0;
    // Writes the job's output to `sink`; with follow, returns once the job has ended and all is written.
    virtual Status logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) = 0;
    // Job groups (core/job_group.hpp). The addresses of a started job's ranks, in rank order (Slurm:
    // node names; Kubernetes: pod IPs; local: this host), or nullopt while they are not all known.
    virtual Result<std::optional<std::vector<std::string>>> hosts(const JobRecord& job) {
        (void)job;
        return fail(ErrorKind::invalid_spec, cluster() + ": this backend cannot run job group members");
    }
    // Delivers the group's address book to `job`, through the channel its wrapper waits on (`channel` is
    // the member's TaskSpec::group_channel). Publishing twice is harmless.
    virtual Status publish(const JobRecord& job, const std::string& channel, const std::string& book) {
        (void)job;
        (void)channel;
        (void)book;
        return fail(ErrorKind::invalid_spec, cluster() + ": this backend cannot run job group members");
    }

    // Runs `request` beside the running `job` and returns the command's exit status.
    virtual Result<int> exec(const JobRecord& job, const ExecRequest& request, ExecIo& io) {
        (void)job;
        (void)request;
        (void)io;
        return fail(ErrorKind::invalid_spec, cluster() + ": this backend cannot run a command beside a job");
    }

    // Streams the running `job`'s output on rank `node` from now on until its program ends (Kubernetes:
    // pods/attach), and returns the program's exit code.
    virtual Result<int> attach(const JobRecord& job, int node, ExecIo& io) {
        (void)job;
        (void)node;
        (void)io;
        return fail(ErrorKind::invalid_spec, cluster() + ": attach is not supported on this backend",
                    fmt::format("tandem logs -f {} follows the job's output", job.id));
    }

    // Services (`tandem serve`, core/service.hpp); only Kubernetes serves. serve_up creates the native
    // objects of `spec` (which has a `service:` section) as `ref` (an empty namespace: the cluster's)
    // (ServeOutcome); serve_update rolls the running service to `spec` as `version`.
    virtual Result<ServeOutcome> serve_up(const TaskSpec& spec, const Placement& placement,
                                                      const ServiceRef& ref) {
        (void)spec;
        (void)placement;
        (void)ref;
        return fail(ErrorKind::invalid_spec, cluster() + ": services run on Kubernetes clusters only");
    }
    virtual Result<ServeOutcome> serve_update(const TaskSpec& spec, const Placement& placement,
                                                          const ServiceRef& ref, int version) {
        (void)spec;
        (void)placement;
        (void)ref;
        (void)version;
        return fail(ErrorKind::invalid_spec, cluster() + ": services run on Kubernetes clusters only");
    }
    // One view per service, in order, from one request per kind of object; with `replicas`, each view
    // lists its pods.
    virtual Result<std::vector<ServiceView>> serve_status(const std::vector<ServiceRef>& services,
                                                          bool replicas) {
        (void)services;
        (void)replicas;
        return fail(ErrorKind::invalid_spec, cluster() + ": services run on Kubernetes clusters only");
    }
    // Removes every object of the service; true when something was there.
    virtual Result<bool> serve_down(const ServiceRef& ref) {
        (void)ref;
        return fail(ErrorKind::invalid_spec, cluster() + ": services run on Kubernetes clusters only");
    }
    // Every replica's output, each line prefixed "[replica K] "; with follow, until the reader stops.
    virtual Status serve_logs(const ServiceRef& ref, const LogOptions& options, const LogSink& sink) {
        (void)ref;
        (void)options;
        (void)sink;
        return fail(ErrorKind::invalid_spec, cluster() + ": services run on Kubernetes clusters only");
    }

    // Removes what publish() left on the cluster once the group has ended (nothing where the channel goes
    // with the job).
    virtual Status unpublish(const JobRecord& job, const std::string& channel) {
        (void)job;
        (void)channel;
        return {};
    }

    // Follows `jobs` until `sink` returns false: the first call at once, then at each change. Backends
    // with a change feed (Kubernetes' watch API) override this; the default refreshes every 2 s.
    virtual Status watch(const std::vector<JobRecord>& jobs, const WatchSink& sink) {
        for (;;) {
            auto updates = refresh(jobs);
            if (!updates) {
                return tl::unexpected(updates.error());
            }
            if (!sink(*updates)) {
                return {};
            }
            std::this_thread::sleep_for(std::chrono::seconds(2));
        }
    }
};

} // namespace tandem
