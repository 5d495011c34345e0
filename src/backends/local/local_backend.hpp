#pragma once
// The local backend: the embedded default cluster, and the reference adapter for the Backend interface.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/local/local_process.hpp"
#include "core/backend.hpp"
#include "core/sweep.hpp"

namespace tandem::local {

struct LocalSettings {
    std::optional<Accelerator> accelerator;       // GPUs this machine has, declared in config ("H100:8")
    std::chrono::milliseconds cancel_grace{5000}; // TERM, then KILL after this
};

class LocalBackend final : public Backend, public GroupAddresses, public ElementCancel {
public:
    LocalBackend(std::string cluster, std::string state_dir, LocalSettings settings);

    const std::string& cluster() const override { return m_cluster; }
    BackendKind kind() const override { return BackendKind::local; }
    Result<std::string> check() override;
    Result<ClusterInventory> inventory(std::chrono::seconds max_age = std::chrono::seconds(0)) override;
    Result<std::string> render(const TaskSpec& spec, const Placement& placement,
                               std::int64_t job_id) override;
    Result<std::string> submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                               const JobIdentity& identity) override;
    // The job folder is tandem's id's: its pid file says whether the process was started.
    Result<std::optional<std::string>> find_submitted(const JobRecord& job) override;
    Result<std::vector<JobUpdate>> refresh(const std::vector<JobRecord>& jobs) override;
    Status cancel(const JobRecord& job) override;
    Status logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) override;
    Capabilities capabilities() override;
    Result<std::optional<std::vector<std::string>>> hosts(const JobRecord& job) override;
    Status publish(const JobRecord& job, const std::string& channel, const std::string& book) override;
    // The book goes with the job: nothing to remove.
    Status unpublish(const JobRecord&, const std::string&) override { return {}; }
    Status cancel_element(const JobRecord& job, std::size_t element) override;

private:
    std::string job_dir(std::int64_t job_id) const;
    std::optional<ProcessId> process_of(const JobRecord& job) const;
    JobUpdate observe(const JobRecord& job) const;
    JobUpdate observe_sweep(const JobRecord& job, const Sweep& sweep) const;
    // The process group element `element` of a sweep runs in (its pid file); nullopt before it started.
    std::optional<int> element_group(const JobRecord& job, std::size_t element) const;
    std::vector<std::string> environment(const TaskSpec& spec, const Placement& placement,
                                         std::int64_t job_id, bool with_secrets) const;

    std::string m_cluster;
    std::string m_jobs_dir;
    LocalSettings m_settings;
};

} // namespace tandem::local
