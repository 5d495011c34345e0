// The Slurm job logic under both transports (see slurm_backend.hpp).

#include "backends/slurm/slurm_backend.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "backends/inventory_cache.hpp"
#include "backends/slurm/group_channel.hpp"
#include "backends/slurm/slurm_exec.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "backends/slurm/submit_plan.hpp"
#include "core/identity.hpp"

namespace tandem::slurm {

SlurmBackend::SlurmBackend(std::string cluster, SlurmSettings settings, const std::string& state_dir)
    : m_cluster(std::move(cluster)), m_settings(std::move(settings)),
      m_inventory_file(state_dir + "/cache/slurm-inventory-" + m_cluster + ".json"),
      m_jobs_dir(state_dir + "/jobs") {}

// The inventory cache's key: the server, and the default_partition setting that shaped the answer.
std::string SlurmBackend::inventory_source() const {
    return endpoint() +
           (m_settings.default_partition.empty() ? "" : " default_partition=" + m_settings.default_partition);
}

Result<ClusterInventory> SlurmBackend::inventory(std::chrono::seconds max_age) {
    if (max_age.count() > 0) {
        if (auto cached = backends::read_inventory_cache(m_inventory_file, inventory_source(), m_cluster,
                                                         BackendKind::slurm, max_age)) {
            cached->sbatch_options = takes_sbatch_options();
            m_inventory = *cached;
            return *cached;
        }
    }
    auto listed = read_partitions();
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    auto& [partitions, nodes] = *listed;
    if (auto st = apply_default_partition(m_cluster, m_settings.default_partition, partitions); !st) {
        return tl::unexpected(st.error());
    }
    ClusterInventory inv = build_inventory(m_cluster, partitions, nodes);
    inv.sbatch_options = takes_sbatch_options();
    m_inventory = inv;
    backends::write_inventory_cache(m_inventory_file, inventory_source(), inv);
    return inv;
}

Result<SubmitPlan> SlurmBackend::plan_on_partition(const TaskSpec& spec, const Placement& placement,
                                                   std::int64_t job_id, const JobIdentity& identity,
                                                   std::chrono::seconds max_age) {
    if (!m_inventory) {
        if (auto inv = inventory(max_age); !inv) {
            return tl::unexpected(inv.error());
        }
    }
    const Pool* pool = find_pool(*m_inventory, placement.pool);
    if (pool == nullptr) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: partition {} is gone", m_cluster, placement.pool));
    }
    auto plan = build_submit_plan(spec, placement, *pool, job_id, identity.token);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    if (!identity.token.empty()) {
        JobIdentity mine = identity;
        mine.user = slurm_user();
        plan->identity = encode_identity(mine);
    }
    auto h = home();
    if (!h) {
        return tl::unexpected(h.error());
    }
    plan->working_directory = *h;
    plan->output_pattern = output_pattern(*h, plan->submit_token);
    return plan;
}

tl::unexpected<Error> SlurmBackend::in_cluster(Error e) const {
    e.message = fmt::format("cluster {}: {}", m_cluster, e.message);
    return tl::unexpected(std::move(e));
}

std::string SlurmBackend::output_pattern(const std::string& home, const std::string& token) {
    return fmt::format("{}/{}-%j.out", home, token); // tandem-<hex>-<id>
}

void SlurmBackend::remember_output(std::int64_t job_id, const std::string& pattern,
                                   const std::string& slurm_id) const {
    std::string path = pattern;
    if (auto at = path.find("%j"); at != std::string::npos) {
        path.replace(at, 2, slurm_id);
    }
    const std::string dir = fmt::format("{}/{}", m_jobs_dir, job_id);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ofstream(dir + "/slurm-output") << path << "\n";
}

std::string SlurmBackend::output_path(const JobRecord& job) const {
    std::ifstream in(fmt::format("{}/{}/slurm-output", m_jobs_dir, job.id));
    std::string path;
    if (std::getline(in, path) && !path.empty()) {
        return path;
    }
    if (!job.submit_token.empty()) { // a job another tandem launched (adopted): its token names the file
        return fmt::format("{}/tandem-{}-{}.out", m_settings.home, job.submit_token, job.remote_id);
    }
    return fmt::format("{}/tandem-{}.out", m_settings.home, job.remote_id);
}

Result<std::optional<std::string>> SlurmBackend::find_submitted(const JobRecord& job) {
    if (job.submit_token.empty()) {
        return std::nullopt;
    }
    const std::string token = "tandem-" + job.submit_token;
    auto found = find_by_token(token);
    if (found && *found) {
        if (auto h = home()) {
            remember_output(job.id, output_pattern(*h, token), **found);
        }
    }
    return found;
}

Result<std::optional<std::vector<std::string>>> SlurmBackend::hosts(const JobRecord& job) {
    auto listed = listed_jobs(job.remote_id);
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    return running_hosts(*listed, job.remote_id, m_cluster);
}

Result<int> SlurmBackend::exec(const JobRecord& job, const ExecRequest& request, ExecIo& io) {
    net::RemoteHost* host = login_host();
    if (host == nullptr) { // capabilities() offers no exec then
        return fail(ErrorKind::internal, fmt::format("cluster {}: exec without ssh:", m_cluster));
    }
    return exec_beside_job(*host, job, hosts(job), request, io, m_cluster);
}

// exec and shell run srun on a login node: over slurmrestd only with ssh: in the cluster's config
// (slurmrestd runs no interactive steps).
// One list call. A comment is anyone's text: its identity says what the job claims to be, the listing
// says whose it is (REST: the job's user_name; SSH: squeue --me, read apart from everyone's jobs).
Result<Discovered> SlurmBackend::discover(bool all_users) {
    auto listed = listing(all_users);
    if (!listed) {
        return in_cluster(listed.error());
    }
    Discovered out;
    out.me = listed->me;
    out.unreadable = listed->unreadable;
    out.history = "Slurm lists a job until MinJobAge (300 s by default) after it ends";
    std::set<std::string> seen;
    auto take = [&](const SlurmJob& j, bool callers) {
        if (!seen.insert(j.job_id).second) {
            return;
        }
        auto id = decode_identity(j.comment);
        if (!id) {
            ++out.unreadable;
            return;
        }
        if (!*id) {
            return; // not one of tandem's jobs
        }
        FoundJob f;
        f.remote_id = j.job_id;
        f.owner = j.user;
        f.callers = callers;
        f.identity = std::move(**id);
        f.update = to_job_update(j);
        f.submitted_at = j.submit_time.value_or(0);
        f.num_nodes = std::max(1, j.node_count);
        out.jobs.push_back(std::move(f));
    };
    for (const auto& j : listed->mine) {
        take(j, true);
    }
    for (const auto& j : listed->everyone) {
        take(j, false);
    }
    m_discovered = std::move(listed->mine);
    return out;
}

Capabilities SlurmBackend::capabilities() {
    Capabilities c;
    c.exec = login_host() != nullptr ? this : nullptr;
    c.group_addresses = this;
    c.discovery = this;
    return c;
}

} // namespace tandem::slurm
