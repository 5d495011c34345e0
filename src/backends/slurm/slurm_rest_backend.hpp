#pragma once
// The Slurm backend over slurmrestd. Remote model: one slurmrestd per cluster, JWT auth through the
// X-SLURM-USER-NAME/-TOKEN headers, OpenAPI v0.0.38 (Slurm 22.05-23.11) or v0.0.40/41 (23.11 on), chosen
// from GET /openapi/v3 and cached in the state folder so a refresh is one request. Jobs are plain batch
// jobs; their output goes to HOME/tandem-<slurm id>.out, which `logs` reads when it is visible here
// (a login node with the shared filesystem). slurmrestd cannot read files.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/slurm/api_version.hpp"
#include "backends/slurm/slurm_backend.hpp"
#include "net/http_client.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

class SlurmRestBackend final : public SlurmBackend {
public:
    SlurmRestBackend(std::string cluster, SlurmSettings settings, std::string state_dir,
                     std::unique_ptr<net::HttpClient> http);

    Result<std::string> check() override;
    Result<std::string> render(const TaskSpec& spec, const Placement& placement,
                               std::int64_t job_id) override;
    Result<std::string> submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                               const JobIdentity& identity) override;
    Result<std::vector<JobUpdate>> refresh(const std::vector<JobRecord>& jobs) override;
    Status logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) override;
    Status publish(const JobRecord& job, const std::string& channel, const std::string& book) override;
    Status unpublish(const JobRecord& job, const std::string& channel) override;

    // With ssh: settings too: the workdir is uploaded through this host before a submit, logs are read
    // through it (SFTP) instead of from a shared filesystem, and exec runs srun from it.
    void attach_files(std::unique_ptr<net::RemoteHost> host) { m_files = std::move(host); }

private:
    std::string endpoint() const override { return m_settings.rest->url; }
    bool takes_sbatch_options() const override { return false; } // slurmrestd reads no #SBATCH line
    Result<std::pair<std::vector<SlurmPartition>, std::vector<SlurmNode>>> read_partitions() override;
    Status cancel_slurm_job(const JobRecord& job, const std::string& slurm_id) override;
    Result<std::vector<SlurmJob>> listed_jobs(const std::string&) override { return list_jobs(); }
    Result<std::optional<std::string>> find_by_token(const std::string& token) override;
    std::string slurm_user() const override { return m_settings.rest->user; }
    Result<SlurmListing> listing(bool all_users) override;
    net::RemoteHost* login_host() override { return m_files.get(); }
    Result<std::string> home() override { return m_settings.home; }

    Result<ApiChoice> api();
    std::string path(const char* tree, const std::string& rest); // "/slurm/v0.0.38" + rest
    Result<nlohmann::json> call(const std::string& method, const std::string& path, const std::string& body,
                                bool idempotent, bool jobs_only = false);
    Result<SubmitPlan> submit_plan(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                   const JobIdentity& identity);
    struct Prepared {
        SubmitPlan plan;
        std::string script;
        nlohmann::json payload;
    };
    // What submit sends and render shows, built once for both.
    Result<Prepared> prepare_submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                    bool mask_secrets, const JobIdentity& identity = {},
                                    const std::vector<MountCopy>& mounts = {});
    // slurm_rest_jobs.cpp: GET /jobs (skimmed), incremental with a snapshot, accounting for the rest.
    Result<std::vector<SlurmJob>> list_jobs();
    // The skimmed answer of GET /jobs, or nullopt for a 304 to `?update_time=since`.
    Result<std::optional<nlohmann::json>> jobs_answer(std::optional<std::int64_t> since);
    Result<std::vector<SlurmJob>> parse_job_list(const nlohmann::json& answer) const;
    // One update per job; a job missing from `listed` is read from accounting.
    Result<std::vector<JobUpdate>> updates_from(const std::vector<SlurmJob>& listed,
                                                const std::vector<JobRecord>& jobs);
    // The updates from the snapshot or from an incremental answer; nullopt when a full GET must decide.
    Result<std::optional<std::vector<JobUpdate>>> incremental_refresh(const std::vector<JobRecord>& jobs,
                                                                      const std::vector<std::string>& ids);
    void store_snapshot(std::int64_t sent_at, const nlohmann::json& answer,
                        const std::vector<std::string>& ids);
    Result<std::optional<SlurmJob>> accounting_job(const std::string& slurm_id);
    // Every accounting row of `slurm_id`: the job, or each element of the array of that id.
    Result<std::vector<SlurmJob>> accounting_rows(const std::string& slurm_id);
    // One output file, over the cluster's ssh: when it has one, else from this machine's filesystem.
    Status stream_output(const JobRecord& job, const std::string& file, const LogOptions& options,
                         const LogSink& sink, const std::function<Result<bool>()>& ended);

    std::string m_cache_file;
    std::string m_jobs_snapshot_file;
    std::unique_ptr<net::HttpClient> m_http;
    std::optional<ApiChoice> m_api;
    std::unique_ptr<net::RemoteHost> m_files; // ssh: workdir upload, logs and exec; may be null
};

} // namespace tandem::slurm
