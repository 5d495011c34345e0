#pragma once
// The Slurm backend over SSH: a login node reached with one SSH connection per tandem invocation
// (net::RemoteHost; every command is a channel on it), Slurm's own CLI there (22.05 through 24.x; the
// command lines and parsers are in slurm_cli.hpp), files over SFTP. Jobs are the same sbatch scripts as
// over REST. Submit is `sbatch --parsable` with the script on stdin; secrets are sent ahead of it on
// stdin and read into sbatch's environment, so they are neither in the script nor on a command line.
// A random token in the job's comment makes a submit that lost its answer findable (squeue --me) before
// it is tried again. Status is one squeue for all of a cluster's jobs, plus one sacct for jobs slurmctld
// no longer holds. A task's workdir is uploaded to HOME/.tandem/workdirs/<token>/ and the job runs there.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/slurm/slurm_backend.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

class SlurmSshBackend final : public SlurmBackend {
public:
    SlurmSshBackend(std::string cluster, SlurmSettings settings, std::string state_dir,
                    std::unique_ptr<net::RemoteHost> host);

    Result<std::string> check() override;
    Result<std::string> render(const TaskSpec& spec, const Placement& placement,
                               std::int64_t job_id) override;
    Result<std::string> submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                               const JobIdentity& identity) override;
    Result<std::vector<JobUpdate>> refresh(const std::vector<JobRecord>& jobs) override;
    Status logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) override;
    Status publish(const JobRecord& job, const std::string& channel, const std::string& book) override;
    Status unpublish(const JobRecord& job, const std::string& channel) override;

private:
    std::string endpoint() const override;
    bool takes_sbatch_options() const override { return true; }
    Result<std::pair<std::vector<SlurmPartition>, std::vector<SlurmNode>>> read_partitions() override;
    Status cancel_slurm_job(const JobRecord& job, const std::string& slurm_id) override;
    Result<std::vector<SlurmJob>> listed_jobs(const std::string& slurm_id) override { return squeue({slurm_id}); }
    // In squeue, else (it ended and left slurmctld) by its output file.
    Result<std::optional<std::string>> find_by_token(const std::string& token) override;
    std::string slurm_user() const override;
    Result<SlurmListing> listing(bool all_users) override;
    net::RemoteHost* login_host() override { return m_host.get(); }
    // No user in the config (a ~/.ssh/config alias): asked of the login node once per invocation.
    Result<std::string> home() override;

    // Runs a command; a transport failure names the cluster.
    Result<net::ExecResult> run(const std::string& command, std::string_view input = {});
    // A command that must exit 0: otherwise a `remote` error quoting what it printed on stderr.
    Result<std::string> run_ok(const char* what, const std::string& command);
    struct Prepared {
        SubmitPlan plan;
        std::string script;
    };
    Result<Prepared> prepare(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                             const std::string& working_directory, const JobIdentity& identity = {});
    Result<std::vector<SlurmJob>> squeue(const std::vector<std::string>& ids);
    Status check_array_size(std::size_t elements);
    Result<std::vector<SlurmJob>> sacct(const std::vector<std::string>& ids);

    std::unique_ptr<net::RemoteHost> m_host;
    bool m_no_accounting = false; // sacct said "accounting storage is disabled"
};

} // namespace tandem::slurm
