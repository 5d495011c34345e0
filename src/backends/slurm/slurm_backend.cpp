// The Slurm job logic under both transports (see slurm_backend.hpp).

#include "backends/slurm/slurm_backend.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "backends/inventory_cache.hpp"
#include "backends/slurm/group_channel.hpp"
#include "backends/slurm/job_array.hpp"
#include "backends/slurm/slurm_exec.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "backends/slurm/submit_plan.hpp"
#include "core/identity.hpp"
#include "core/line_prefix.hpp"

namespace tandem::slurm {

namespace {

bool is_job_id(const std::string& id) {
    return !id.empty() && std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); });
}

} // namespace

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
    plan->output_pattern = output_pattern(*h, plan->submit_token, plan->sweep.has_value());
    return plan;
}

tl::unexpected<Error> SlurmBackend::in_cluster(Error e) const {
    e.message = fmt::format("cluster {}: {}", m_cluster, e.message);
    return tl::unexpected(std::move(e));
}

std::string SlurmBackend::output_pattern(const std::string& home, const std::string& token, bool array) {
    // tandem-<hex>-<id>; an array's elements tandem-<hex>-<array id>_<index> (%j would be each
    // element's own job id).
    return fmt::format("{}/{}-{}.out", home, token, array ? "%A_%a" : "%j");
}

void SlurmBackend::remember_output(std::int64_t job_id, const std::string& pattern,
                                   const std::string& slurm_id) const {
    std::string path = pattern;
    for (const char* id : {"%j", "%A"}) { // an array's keeps its %a: the element's index (element_output)
        if (auto at = path.find(id); at != std::string::npos) {
            path.replace(at, 2, slurm_id);
        }
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
            remember_output(job.id, output_pattern(*h, token, sweep_of(job).has_value()), **found);
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

Status SlurmBackend::cancel(const JobRecord& job) {
    if (!is_job_id(job.remote_id)) {
        return fail(ErrorKind::internal, fmt::format("job {} has no Slurm job id", job.id));
    }
    return cancel_slurm_job(job, job.remote_id);
}

Status SlurmBackend::cancel_element(const JobRecord& job, std::size_t element) {
    if (!is_job_id(job.remote_id)) {
        return fail(ErrorKind::internal, fmt::format("job {} has no Slurm job id", job.id));
    }
    return cancel_slurm_job(job, fmt::format("{}_{}", job.remote_id, element));
}

Capabilities SlurmBackend::capabilities() {
    Capabilities c;
    c.element_cancel = this;
    c.exec = login_host() != nullptr ? this : nullptr;
    c.group_addresses = this;
    c.discovery = this;
    return c;
}

Status SlurmBackend::sweep_logs(const JobRecord& job, const Sweep& sweep, const LogOptions& options,
                                const LogSink& sink, const OutputStream& stream) {
    auto which = log_elements(job.id, sweep, options.element);
    if (!which) {
        return tl::unexpected(which.error());
    }
    const std::string pattern = output_path(job);
    bool reader_gone = false;
    for (const std::size_t i : *which) {
        LinePrefix prefix(options.element ? std::string() : "[" + sweep_element_label(sweep, i) + "] ");
        const LogSink labelled = [&](std::string_view chunk) {
            const auto out = prefix.feed(chunk);
            reader_gone = reader_gone || (!out.empty() && !sink(out));
            return !reader_gone;
        };
        const std::string path = element_output(pattern, i);
        auto element_state = [&]() -> Result<std::optional<ElementState>> {
            auto updates = refresh({job});
            if (!updates) {
                return tl::unexpected(updates.error());
            }
            const auto& u = updates->front();
            const auto states = parse_element_states(u.elements.value_or(std::string()));
            if (!states || i >= states->size()) {
                return std::optional<ElementState>{}; // Slurm has no record left: nothing to wait for
            }
            return std::optional<ElementState>((*states)[i]);
        };
        Status step;
        if (options.follow) {
            step = stream(path, options, labelled, [&]() -> Result<bool> {
                auto state = element_state();
                if (!state) {
                    return tl::unexpected(state.error());
                }
                return !*state || is_terminal((*state)->state) || (*state)->state == JobState::unknown;
            });
        } else {
            step = stream(path, options, labelled, [] { return Result<bool>(true); });
            if (!step && step.error().kind == ErrorKind::not_found && !options.element) {
                step = {}; // not started yet, or never: nothing to show for it
            }
        }
        if (!step) {
            return step;
        }
        if (const auto rest = prefix.finish(); !rest.empty() && !reader_gone) {
            reader_gone = !sink(rest);
        }
        if (reader_gone) {
            break;
        }
    }
    return {};
}

} // namespace tandem::slurm
