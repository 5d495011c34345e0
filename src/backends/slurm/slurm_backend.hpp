#pragma once
// The Slurm job logic both transports share: slurmrestd (slurm_rest_backend.hpp) and the Slurm CLI over
// SSH (slurm_ssh_backend.hpp) are this class with their own way of asking. It keeps the inventory (and its
// cache), the submit plan's partition facts and output file, the lost-submit lookup by token, the hosts of
// a running job and exec beside it; the transports answer the questions below.
//
// Output files: Slurm job ids are not unique over time (a reinstalled cluster starts at 1 again) nor
// across clusters sharing a home directory, so a job's output file name carries the submit's random token
// too (HOME/tandem-<hex>-<slurm id>.out). Slurm returns the pattern unexpanded, so the expanded path is
// kept in STATE/jobs/ID/slurm-output, as the local backend keeps its files.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/slurm/slurm_config.hpp"
#include "backends/slurm/slurm_model.hpp"
#include "core/backend.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

class SlurmBackend : public Backend,
                     public Exec,
                     public GroupAddresses,
                     public Discovery,
                     public ElementCancel {
public:
    const std::string& cluster() const final { return m_cluster; }
    BackendKind kind() const final { return BackendKind::slurm; }
    Result<ClusterInventory> inventory(std::chrono::seconds max_age = std::chrono::seconds(0)) final;
    Result<std::optional<std::string>> find_submitted(const JobRecord& job) final;
    Capabilities capabilities() final;
    Result<std::optional<std::vector<std::string>>> hosts(const JobRecord& job) final;
    Result<int> exec(const JobRecord& job, const ExecRequest& request, ExecIo& io) final;
    // Jobs whose comment carries an identity; a job is the caller's when Slurm says its user is.
    Result<Discovered> discover(bool all_users) final;
    Status cancel(const JobRecord& job) final;
    // scancel of the array's element: "<array id>_<K>".
    Status cancel_element(const JobRecord& job, std::size_t element) final;

    // Where a job's output lands: the path kept at submit, else HOME/tandem-<token>-<id>.out.
    std::string output_path(const JobRecord& job) const;

protected:
    SlurmBackend(std::string cluster, SlurmSettings settings, const std::string& state_dir);

    // ---- What each transport answers ----
    // The server the inventory came from, for its cache key ("https://host:6820", "ssh://user@host").
    virtual std::string endpoint() const = 0;
    // Whether #SBATCH lines reach the scheduler (sbatch does; slurmrestd reads none).
    virtual bool takes_sbatch_options() const = 0;
    virtual Result<std::pair<std::vector<SlurmPartition>, std::vector<SlurmNode>>> read_partitions() = 0;
    // The jobs slurmctld holds, at least `slurm_id` if it still does.
    virtual Result<std::vector<SlurmJob>> listed_jobs(const std::string& slurm_id) = 0;
    // The job whose comment carries `token` ("tandem-<token>"); nullopt when none.
    virtual Result<std::optional<std::string>> find_by_token(const std::string& token) = 0;
    // The login node exec runs srun from; nullptr when the cluster has none (slurmrestd without ssh:).
    virtual net::RemoteHost* login_host() = 0;
    // Cancels Slurm job `slurm_id` ("123", or an array's element "123_4") of tandem job `job`; a job
    // Slurm no longer knows is no error.
    virtual Status cancel_slurm_job(const JobRecord& job, const std::string& slurm_id) = 0;
    // The submitting user's home on the cluster.
    virtual Result<std::string> home() = 0;
    // The user Slurm knows the caller as (rest.user; the ssh user), for the identity's u=.
    virtual std::string slurm_user() const = 0;
    // One list call: the caller's jobs (`mine`), and with `all_users` every job of the queue.
    virtual Result<SlurmListing> listing(bool all_users) = 0;

    // ---- Shared steps ----
    // The partition facts a submit needs (from this invocation's inventory, else one at most `max_age`
    // old) and the plan built on them; "partition gone" when the placement's pool is no longer there.
    // With an identity (a submit, not a render), the plan carries it, with the Slurm user, for the comment.
    Result<SubmitPlan> plan_on_partition(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                         const JobIdentity& identity, std::chrono::seconds max_age);

    // HOME/<token>-%j.out, the pattern Slurm writes a job's output to.
    static std::string output_pattern(const std::string& home, const std::string& token, bool array);
    // `e` with this cluster's name before its message ("cluster gpu: ...").
    tl::unexpected<Error> in_cluster(Error e) const;
    // Keeps the expanded output path of tandem job `job_id`, now Slurm job `slurm_id`.
    void remember_output(std::int64_t job_id, const std::string& pattern, const std::string& slurm_id) const;

    // How a transport streams one output file (`ended`: whether to stop following); logs() of a sweep reads
    // each element's through it.
    using OutputStream =
        std::function<Status(const std::string& path, const LogOptions& options, const LogSink& sink,
                             const std::function<Result<bool>()>& ended)>;
    // logs() of a sweep: each element's output file in index order, every line labelled with the element's
    // values (`--element K`: that one, unlabelled). Following goes through the elements in order, each
    // until it has ended; an element that never ran (cancelled while pending) has no file and is passed over.
    Status sweep_logs(const JobRecord& job, const Sweep& sweep, const LogOptions& options,
                      const LogSink& sink, const OutputStream& stream);

    // The caller's jobs as discovery just listed them (every state slurmctld holds): the refresh right
    // after it in the same invocation reads them instead of asking again (one list call per status).
    std::optional<std::vector<SlurmJob>> take_discovered() {
        auto out = std::move(m_discovered);
        m_discovered.reset();
        return out;
    }

    std::string m_cluster;
    SlurmSettings m_settings;
    std::optional<ClusterInventory> m_inventory; // from this invocation, for submit's partition facts

private:
    std::string inventory_source() const;
    std::optional<std::vector<SlurmJob>> m_discovered;
    std::string m_inventory_file;
    std::string m_jobs_dir;
};

} // namespace tandem::slurm
