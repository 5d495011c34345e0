#pragma once
// The Backend interface every adapter implements: the job interface every backend has. What only some
// backends do (exec, attach, group addresses, services, watch) is a capability (core/capabilities.hpp).
// One instance serves one configured cluster for one tandem invocation, so it may keep a connection open
// across calls (one handshake per invocation).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/capabilities.hpp"
#include "core/error.hpp"
#include "core/identity.hpp"
#include "core/inventory.hpp"
#include "core/job.hpp"
#include "core/planner.hpp"
#include "core/service.hpp"
#include "core/spec.hpp"

namespace tandem {

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
    // Submits; returns the backend's id. `job_id` is tandem's id; `identity` (core/identity.hpp) is written
    // into the native object: its token (JobRecord::submit_token) lets a retried submit, or find_submitted()
    // after a killed launch, know the job, and the rest lets any tandem find it again (Discovery). The
    // backend sets identity.user to its cluster's notion of the caller.
    virtual Result<std::string> submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                       const JobIdentity& identity) = 0;
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
    // The narrow interfaces this backend offers beside the job interface (core/capabilities.hpp); null
    // members where it has none. The pointers live as long as the backend.
    virtual Capabilities capabilities() = 0;
};

} // namespace tandem
