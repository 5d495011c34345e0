#include "backends/slurm/slurm_ssh_backend.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backends/inventory_cache.hpp"
#include "backends/slurm/group_channel.hpp"
#include "backends/slurm/job_array.hpp"
#include "backends/slurm/remote_log.hpp"
#include "backends/slurm/remote_upload.hpp"
#include "backends/slurm/sbatch_script.hpp"
#include "backends/slurm/script_quoting.hpp"
#include "backends/slurm/slurm_cli.hpp"
#include "backends/slurm/slurm_exec.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "backends/slurm/submit_plan.hpp"
#include "backends/upload/upload_set.hpp"

namespace tandem::slurm {

namespace {

// The first line of what a command printed on stderr, for an error message.
std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return line.empty() ? std::string("(nothing on stderr)") : line.substr(0, 300);
}

bool is_job_id(const std::string& id) {
    return !id.empty() && std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); });
}

} // namespace

SlurmSshBackend::SlurmSshBackend(std::string cluster, SlurmSettings settings, std::string state_dir,
                                 std::unique_ptr<net::RemoteHost> host)
    : SlurmBackend(std::move(cluster), std::move(settings), state_dir), m_host(std::move(host)) {}

Result<net::ExecResult> SlurmSshBackend::run(const std::string& command, std::string_view input) {
    auto r = m_host->exec(command, input);
    if (!r) {
        return in_cluster(r.error());
    }
    return r;
}

Result<std::string> SlurmSshBackend::run_ok(const char* what, const std::string& command) {
    auto r = run(command);
    if (!r) {
        return tl::unexpected(r.error());
    }
    if (r->exit_status != 0) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: {} on {} exited {}: {}", m_cluster, what,
                                                   m_host->describe(), r->exit_status, first_line(r->err)));
    }
    return std::move(r->out);
}

Result<std::string> SlurmSshBackend::home() {
    if (m_settings.home.empty()) {
        // No user in the config (a ~/.ssh/config alias): ask the login node once per invocation.
        auto out = run_ok("printf $HOME", "printf '%s\\n' \"$HOME\"");
        if (!out) {
            return tl::unexpected(out.error());
        }
        std::string h = out->substr(0, out->find('\n'));
        if (h.empty() || h.front() != '/') {
            return fail(ErrorKind::remote,
                        fmt::format("cluster {}: the login node's $HOME is '{}'", m_cluster, h),
                        "set home: for the cluster in config.yaml");
        }
        m_settings.home = h;
    }
    return m_settings.home;
}

// ssh.user, else the user the connection names (user@host:port: ~/.ssh/config's, else the local one).
std::string SlurmSshBackend::slurm_user() const {
    if (!m_settings.ssh->user.empty()) {
        return m_settings.ssh->user;
    }
    const std::string who = m_host ? m_host->describe() : std::string();
    const auto at = who.find('@');
    return at == std::string::npos ? std::string() : who.substr(0, at);
}

Result<SlurmListing> SlurmSshBackend::listing(bool all_users) {
    auto out = run_ok("squeue", cli::discover_command(all_users));
    if (!out) {
        return tl::unexpected(out.error());
    }
    return cli::parse_discover(*out);
}

Result<std::string> SlurmSshBackend::check() {
    auto out = run_ok("sinfo --version", cli::version_command());
    if (!out) {
        return tl::unexpected(out.error());
    }
    auto version = cli::parse_version(*out);
    if (!version) {
        return in_cluster(version.error());
    }
    return fmt::format("Slurm {} over SSH ({})", *version, m_host->describe());
}

std::string SlurmSshBackend::endpoint() const {
    return "ssh://" + m_host->describe();
}

Result<std::pair<std::vector<SlurmPartition>, std::vector<SlurmNode>>> SlurmSshBackend::read_partitions() {
    auto out = run_ok("sinfo", cli::sinfo_command());
    if (!out) {
        return tl::unexpected(out.error());
    }
    auto view = cli::parse_sinfo(*out);
    if (!view) {
        return in_cluster(view.error());
    }
    return std::pair{std::move(view->partitions), std::move(view->nodes)};
}

Result<SlurmSshBackend::Prepared> SlurmSshBackend::prepare(const TaskSpec& spec, const Placement& placement,
                                                           std::int64_t job_id,
                                                           const std::string& working_directory,
                                                           const JobIdentity& identity) {
    auto plan = plan_on_partition(spec, placement, job_id, identity, std::chrono::seconds(30));
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    if (!working_directory.empty()) {
        plan->working_directory = working_directory;
    }
    auto script = render_sbatch_script(spec, *plan);
    if (!script) {
        return tl::unexpected(script.error());
    }
    return Prepared{std::move(*plan), std::move(*script)};
}

Result<std::string> SlurmSshBackend::render(const TaskSpec& spec, const Placement& placement,
                                            std::int64_t job_id) {
    auto h = home();
    if (!h) {
        return tl::unexpected(h.error());
    }
    const std::string workdir = spec.workdir ? *h + "/.tandem/workdirs/<token>" : std::string();
    auto prepared = prepare(spec, placement, job_id, workdir);
    if (!prepared) {
        return tl::unexpected(prepared.error());
    }
    std::string uploads;
    for (const auto& [destination, value] : spec.file_mounts) {
        if (auto source = upload::local_mount_source(value)) {
            prepared->plan.file_mounts.push_back(
                MountCopy{upload_cache_dir(*h) + "/<hash of " + *source + ">", destination, false});
            uploads += fmt::format("# file_mounts: {} is uploaded to {}/<hash> (once per content) and copied "
                                   "to {} on every node\n",
                                   *source, upload_cache_dir(*h), destination);
        }
    }
    if (!prepared->plan.file_mounts.empty()) {
        auto script = render_sbatch_script(spec, prepared->plan);
        if (!script) {
            return tl::unexpected(script.error());
        }
        prepared->script = std::move(*script);
    }
    std::vector<std::string> names;
    for (const auto& [name, value] : spec.secrets) {
        names.push_back(name);
    }
    std::string head = fmt::format("# ssh {} {}\n", m_host->describe(), cli::sbatch_command(names));
    if (!names.empty()) {
        head +=
            "# the secrets' values are sent on stdin ahead of the script (NUL-terminated, in this order) and "
            "reach the job only through sbatch's environment\n";
    }
    if (spec.workdir) {
        head += fmt::format("# workdir {} is uploaded to {}/<hash> (once per content) and copied to {} "
                            "first\n",
                            *spec.workdir, upload_cache_dir(*h), workdir);
    }
    head += uploads;
    return head + "# script on stdin:\n" + prepared->script;
}

Result<std::optional<std::string>> SlurmSshBackend::find_by_token(const std::string& token) {
    auto r = run(cli::squeue_comments_command());
    if (!r) {
        return tl::unexpected(r.error());
    }
    if (r->exit_status != 0) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: squeue exited {}: {}", m_cluster,
                                                   r->exit_status, first_line(r->err)));
    }
    if (auto id = cli::find_comment(r->out, token)) {
        return id;
    }
    // Gone from slurmctld (it ended over MinJobAge ago): its output file, <home>/<token>-<id>.out, names it.
    if (token.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
        return std::nullopt; // not one of tandem's tokens: no glob built from it
    }
    auto h = home();
    if (!h) {
        return tl::unexpected(h.error());
    }
    auto listed = run(fmt::format("ls -1 -- {}/{}-*.out 2>/dev/null || true", shell_quote(*h), token));
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    const std::string prefix = fmt::format("{}/{}-", *h, token);
    for (std::size_t at = 0; at < listed->out.size();) {
        auto end = listed->out.find('\n', at);
        end = end == std::string::npos ? listed->out.size() : end;
        const std::string line = listed->out.substr(at, end - at);
        at = end + 1;
        if (line.size() > prefix.size() + 4 && line.compare(0, prefix.size(), prefix) == 0 &&
            line.compare(line.size() - 4, 4, ".out") == 0) {
            std::string id = line.substr(prefix.size(), line.size() - prefix.size() - 4);
            id = id.substr(0, id.find('_')); // an array element's file: <array id>_<index>
            if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) {
                return id;
            }
        }
    }
    return std::nullopt;
}

// A job array's largest index must stay below the cluster's MaxArraySize (1001 unless the admins set it):
// said before sbatch's own "Invalid job array specification", with the numbers.
Status SlurmSshBackend::check_array_size(std::size_t elements) {
    auto config = run_ok("scontrol show config", cli::command_line({"scontrol", "show", "config"}));
    if (!config) {
        return tl::unexpected(config.error());
    }
    const auto most = cli::parse_max_array_size(*config);
    if (most && elements > static_cast<std::size_t>(*most)) {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("sweep: {} elements, but cluster {} takes job arrays of at most {} (its "
                                "MaxArraySize)",
                                elements, m_cluster, *most),
                    "split the sweep, or ask the cluster's admins to raise MaxArraySize");
    }
    return {};
}

Result<std::string> SlurmSshBackend::submit(const TaskSpec& spec, const Placement& placement,
                                            std::int64_t job_id, const JobIdentity& identity) {
    // The token names the uploaded workdir too, so it is known to prepare() before the upload.
    auto h = home();
    if (!h) {
        return tl::unexpected(h.error());
    }
    auto prepared = prepare(spec, placement, job_id, "", identity);
    if (!prepared) {
        return tl::unexpected(prepared.error());
    }
    std::vector<MountCopy> mounts;
    auto uploaded = with_uploads(m_host.get(), spec, *h, m_settings.workdir_limit_bytes,
                                 prepared->plan.submit_token, m_cluster, mounts);
    if (!uploaded) {
        return tl::unexpected(uploaded.error());
    }
    if (uploaded->workdir != spec.workdir || !mounts.empty()) {
        prepared->plan.working_directory = uploaded->workdir.value_or(prepared->plan.working_directory);
        prepared->plan.file_mounts = std::move(mounts);
        auto script = render_sbatch_script(*uploaded, prepared->plan);
        if (!script) {
            return tl::unexpected(script.error());
        }
        prepared->script = std::move(*script);
    }
    const auto& plan = prepared->plan;
    if (plan.sweep) {
        if (auto fits = check_array_size(plan.sweep->size()); !fits) {
            return tl::unexpected(fits.error());
        }
    }
    std::vector<std::string> names, values;
    for (const auto& [name, value] : spec.secrets) {
        names.push_back(name);
        values.push_back(value);
    }
    const std::string command = cli::sbatch_command(names);
    const std::string input = cli::sbatch_input(values, prepared->script);
    auto answer = run(command, input);
    // A lost connection may hide a submit that reached slurmctld: look for the token before trying again,
    // so a retry never makes a second job.
    for (int attempt = 1; !answer && is_retryable(answer.error().kind) && attempt < 3; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300 * attempt));
        if (!m_host->reconnect()) {
            continue;
        }
        if (auto existing = find_by_token(plan.submit_token); existing && *existing) {
            remember_output(job_id, plan.output_pattern, **existing);
            return **existing;
        }
        answer = run(command, input);
    }
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    if (answer->exit_status != 0) {
        // "sbatch: error: Batch job submission failed: Requested node configuration is not available"
        return tl::unexpected(refusal(
            Error{ErrorKind::remote,
                  fmt::format("cluster {}: sbatch refused the job: {}", m_cluster, first_line(answer->err)),
                  {}}));
    }
    auto id = cli::parse_sbatch_parsable(answer->out);
    if (!id) {
        return in_cluster(id.error());
    }
    remember_output(job_id, plan.output_pattern, *id);
    return *id;
}

Result<std::vector<SlurmJob>> SlurmSshBackend::squeue(const std::vector<std::string>& ids) {
    auto r = run(cli::squeue_command(ids));
    if (!r) {
        return tl::unexpected(r.error());
    }
    if (r->exit_status != 0) {
        // squeue fails when none of the ids is still held ("Invalid job id specified"): none is listed.
        if (r->err.find("Invalid job id specified") != std::string::npos) {
            return std::vector<SlurmJob>{};
        }
        return fail(ErrorKind::remote, fmt::format("cluster {}: squeue exited {}: {}", m_cluster,
                                                   r->exit_status, first_line(r->err)));
    }
    auto jobs = cli::parse_squeue(r->out);
    if (!jobs) {
        return in_cluster(jobs.error());
    }
    return jobs;
}

Result<std::vector<SlurmJob>> SlurmSshBackend::sacct(const std::vector<std::string>& ids) {
    auto r = run(cli::sacct_command(ids));
    if (!r) {
        return tl::unexpected(r.error());
    }
    if (r->exit_status != 0) {
        if (r->err.find("accounting storage is disabled") != std::string::npos) {
            m_no_accounting = true;
            return std::vector<SlurmJob>{};
        }
        return fail(ErrorKind::remote, fmt::format("cluster {}: sacct exited {}: {}", m_cluster,
                                                   r->exit_status, first_line(r->err)));
    }
    auto jobs = cli::parse_sacct(r->out);
    if (!jobs) {
        return in_cluster(jobs.error());
    }
    return jobs;
}

Result<std::vector<JobUpdate>> SlurmSshBackend::refresh(const std::vector<JobRecord>& jobs) {
    std::vector<std::string> ids;
    for (const auto& job : jobs) {
        if (is_job_id(job.remote_id)) {
            ids.push_back(job.remote_id);
        }
    }
    // A job's line by its id; a job array's (a sweep's) element lines by the array's id, squeue's first.
    std::map<std::string, SlurmJob> by_id;
    std::map<std::string, std::vector<SlurmJob>> array_lines;
    auto keep = [&](std::vector<SlurmJob>& listed, std::map<std::string, SlurmJob>& into) {
        for (auto& j : listed) {
            if (j.array_task || !j.array_pending.empty()) {
                array_lines[j.job_id].push_back(std::move(j));
            } else {
                into[j.job_id] = std::move(j);
            }
        }
    };
    if (auto mine = take_discovered()) { // discovery's squeue --me of a moment ago: every job of the user
        keep(*mine, by_id);
    } else if (!ids.empty()) {
        auto listed = squeue(ids);
        if (!listed) {
            return tl::unexpected(listed.error());
        }
        keep(*listed, by_id);
    }
    // Jobs slurmctld no longer holds (MinJobAge), and sweeps some of whose elements it no longer lists:
    // one sacct call for all of them.
    std::vector<std::string> missing;
    std::vector<std::optional<Sweep>> sweeps;
    sweeps.reserve(jobs.size());
    for (const auto& job : jobs) {
        sweeps.push_back(sweep_of(job));
        if (!is_job_id(job.remote_id)) {
            continue;
        }
        const auto lines = array_lines.find(job.remote_id);
        const bool whole =
            sweeps.back() ? lines != array_lines.end() && lists_every_element(lines->second, *sweeps.back())
                          : by_id.count(job.remote_id) != 0U;
        if (!whole) {
            missing.push_back(job.remote_id);
        }
    }
    std::map<std::string, SlurmJob> accounted;
    if (!missing.empty()) {
        auto rows = sacct(missing);
        if (!rows) {
            return tl::unexpected(rows.error());
        }
        keep(*rows, accounted);
    }
    std::vector<JobUpdate> out;
    out.reserve(jobs.size());
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        const auto& job = jobs[k];
        if (sweeps[k] && is_job_id(job.remote_id)) {
            std::vector<const SlurmJob*> lines;
            if (const auto it = array_lines.find(job.remote_id); it != array_lines.end()) {
                for (const auto& line : it->second) {
                    lines.push_back(&line);
                }
            }
            out.push_back(array_update(*sweeps[k], lines, job.elements,
                                       left_slurmctld(job.remote_id, !m_no_accounting).reason));
            continue;
        }
        if (auto it = by_id.find(job.remote_id); it != by_id.end()) {
            out.push_back(to_job_update(it->second));
        } else if (auto at = accounted.find(job.remote_id); at != accounted.end()) {
            out.push_back(to_job_update(at->second));
        } else {
            out.push_back(is_job_id(job.remote_id)
                              ? left_slurmctld(job.remote_id, !m_no_accounting)
                              : JobUpdate{JobState::unknown, "no Slurm job id was recorded for this job",
                                          std::nullopt, std::nullopt, std::nullopt});
        }
    }
    return out;
}

Status SlurmSshBackend::publish(const JobRecord& job, const std::string& channel, const std::string& book) {
    (void)job;
    auto dir = home();
    if (!dir) {
        return tl::unexpected(dir.error());
    }
    return publish_book(*m_host, *dir, channel, book, m_cluster);
}

Status SlurmSshBackend::unpublish(const JobRecord& job, const std::string& channel) {
    (void)job;
    auto dir = home();
    if (!dir) {
        return tl::unexpected(dir.error());
    }
    return unpublish_book(*m_host, *dir, channel, m_cluster);
}

Status SlurmSshBackend::cancel_slurm_job(const JobRecord& job, const std::string& slurm_id) {
    (void)job;
    auto r = run(cli::scancel_command(slurm_id));
    if (!r) {
        return tl::unexpected(r.error());
    }
    if (r->exit_status != 0 && r->err.find("Invalid job id") == std::string::npos) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: scancel {} exited {}: {}", m_cluster,
                                                   slurm_id, r->exit_status, first_line(r->err)));
    }
    return {};
}

Status SlurmSshBackend::logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) {
    if (m_settings.home.empty()) {
        if (auto h = home(); !h) {
            return tl::unexpected(h.error());
        }
    }
    if (auto sweep = sweep_of(job)) {
        return sweep_logs(job, *sweep, options, sink,
                          [&](const std::string& path, const LogOptions& o, const LogSink& out,
                              const std::function<Result<bool>()>& ended) {
                              return stream_remote_log(
                                  *m_host, RemoteLogTarget{m_cluster, job.id, path, job.num_nodes}, o, out,
                                  ended);
                          });
    }
    RemoteLogTarget target{m_cluster, job.id, output_path(job), job.num_nodes};
    return stream_remote_log(*m_host, target, options, sink, [&]() -> Result<bool> {
        auto updates = refresh({job});
        if (!updates) {
            return tl::unexpected(updates.error());
        }
        // UNKNOWN here means Slurm has no record left of the job: there is nothing more to wait for.
        return is_terminal(updates->front().state) || updates->front().state == JobState::unknown;
    });
}

} // namespace tandem::slurm
