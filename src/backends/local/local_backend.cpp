// The local backend runs a task on this machine, detached from the CLI. Remote model: a job is a process
// group led by a small bash wrapper in STATE/jobs/ID/; the wrapper runs setup, then run, and writes the
// exit code to a file itself, so the outcome is known even when no tandem process was watching.

#include "backends/local/local_backend.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "backends/file_log.hpp"
#include "core/git_checkout.hpp"
#include "core/job_group.hpp"
#include "core/quantity.hpp"
#include "sys/clock.hpp"

namespace tandem::local {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_wrapper = R"SH(#!/bin/bash
# tandem local job: setup, then run; the exit code is written here so it outlives the CLI.
d="$(cd "$(dirname "$0")" && pwd)"
rc=0
@GIT@if [ "$rc" -eq 0 ] && [ -f "$d/setup.sh" ]; then /bin/bash "$d/setup.sh"; rc=$?; fi
if [ "$rc" -eq 0 ] && [ -f "$d/run.sh" ]; then /bin/bash "$d/run.sh"; rc=$?; fi
printf '%s\n' "$rc" > "$d/exit_code.tmp" && mv -f "$d/exit_code.tmp" "$d/exit_code"
exit "$rc"
)SH";

// The wrapper; a job group member first waits for the group's addresses (published into the job's
// directory); with a git workdir it then clones it into the job's directory and runs there.
std::string wrapper_text(const TaskSpec& spec) {
    std::string text = k_wrapper;
    std::string git;
    if (!spec.group_channel.empty()) {
        git = group_wait_function() + "tandem_group_wait \"$d/group.env\" || rc=$?\n";
    }
    if (spec.git_workdir) {
        git += git_checkout_function() +
               "[ \"$rc\" -eq 0 ] && { tandem_git_checkout \"$d/workdir\" && cd \"$d/workdir\" || rc=$?; }\n";
    }
    text.replace(text.find("@GIT@"), 5, git);
    return text;
}

using sys::now_seconds;

Status write_file(const fs::path& path, std::string_view text, fs::perms perms) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
        return fail(ErrorKind::internal, fmt::format("cannot write {}", path.string()));
    }
    std::error_code ec;
    fs::permissions(path, perms, ec);
    return {};
}

std::optional<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

double total_memory_gb() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    long kb = 0;
    while (in >> key >> kb) {
        if (key == "MemTotal:") {
            return static_cast<double>(kb) / (1024.0 * 1024.0);
        }
        in.ignore(256, '\n');
    }
    return 0;
}

int gpus_requested(const Placement& placement, const TaskSpec& spec) {
    auto options = spec.options();
    if (placement.option_index < 0 || static_cast<std::size_t>(placement.option_index) >= options.size()) {
        return 0;
    }
    const auto& accs = options[static_cast<std::size_t>(placement.option_index)].resources.accelerators;
    return accs.empty() ? 0 : static_cast<int>(accs.front().count);
}

} // namespace

LocalBackend::LocalBackend(std::string cluster, std::string state_dir, LocalSettings settings)
    : m_cluster(std::move(cluster)), m_jobs_dir(std::move(state_dir) + "/jobs"),
      m_settings(std::move(settings)) {}

std::string LocalBackend::job_dir(std::int64_t job_id) const {
    return fmt::format("{}/{}", m_jobs_dir, job_id);
}

Result<std::string> LocalBackend::check() {
    if (access("/bin/bash", X_OK) != 0) {
        return fail(ErrorKind::unavailable, "local: /bin/bash is missing; local jobs run through bash");
    }
    std::error_code ec;
    fs::create_directories(m_jobs_dir, ec);
    if (ec || access(m_jobs_dir.c_str(), W_OK) != 0) {
        return fail(ErrorKind::internal, fmt::format("local: cannot write to {}", m_jobs_dir));
    }
    return fmt::format("bash found, {} writable", m_jobs_dir);
}

Result<ClusterInventory>
LocalBackend::inventory(std::chrono::seconds /*max_age: always fresh, it is cheap*/) {
    ClusterInventory inv;
    inv.name = m_cluster;
    inv.kind = BackendKind::local;
    Pool pool;
    pool.name = "local";
    pool.nodes_total = 1;
    pool.nodes_free = 1;
    pool.cpus_per_node = static_cast<int>(std::thread::hardware_concurrency());
    pool.memory_gb_per_node = total_memory_gb();
    if (m_settings.accelerator) {
        pool.accelerator = m_settings.accelerator->name;
        pool.gpus_per_node = static_cast<int>(m_settings.accelerator->count);
        pool.gpus_total = pool.gpus_per_node;
        pool.gpus_free = pool.gpus_per_node;
    }
    pool.node_states = {"up:1"};
    inv.pools.push_back(std::move(pool));
    return inv;
}

std::vector<std::string> LocalBackend::environment(const TaskSpec& spec, const Placement& placement,
                                                   std::int64_t job_id, bool with_secrets) const {
    std::vector<std::string> env;
    // The job sees the user's environment, as with sbatch's default --export=ALL.
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view kv(*e);
        // A parent job's rank variables must not leak into this one; TANDEM_HOME is the user's setting.
        const bool ours = kv.rfind("TANDEM_", 0) == 0 && kv.rfind("TANDEM_HOME=", 0) != 0;
        if (ours || kv.rfind("SKYPILOT_", 0) == 0) {
            continue;
        }
        env.emplace_back(kv);
    }
    const std::string gpus = std::to_string(gpus_requested(placement, spec));
    const std::string id = std::to_string(job_id);
    const std::pair<const char*, std::string> common[] = {
        {"JOB_ID", id},
        {"NODE_RANK", "0"},
        {"NUM_NODES", "1"},
        {"NODE_IPS", "127.0.0.1"},
        {"NUM_GPUS_PER_NODE", gpus},
    };
    for (const auto& [k, v] : common) {
        env.push_back(fmt::format("TANDEM_{}={}", k, v));
        if (std::string_view(k) != "JOB_ID") {
            env.push_back(fmt::format("SKYPILOT_{}={}", k, v));
        }
    }
    env.push_back(fmt::format("TANDEM_JOB_NAME={}", spec.name));
    env.push_back(fmt::format("SKYPILOT_TASK_ID=tandem-{}-{}", job_id, spec.name));
    if (spec.git_workdir) {
        for (const auto& [k, v] : git_checkout_environment(*spec.git_workdir)) {
            env.push_back(k + "=" + v);
        }
    }
    for (const auto& [k, v] : spec.envs) {
        env.push_back(k + "=" + v);
    }
    for (const auto& [k, v] : spec.secrets) {
        env.push_back(k + "=" + (with_secrets ? v : std::string("<secret>")));
    }
    return env;
}

Result<std::string> LocalBackend::render(const TaskSpec& spec, const Placement& placement,
                                         std::int64_t job_id) {
    // job_id 0: a dry run, before the store has given the job its id.
    const std::string dir = job_id == 0 ? m_jobs_dir + "/<ID>" : job_dir(job_id);
    std::string out = fmt::format("# {}/wrapper.sh (cwd: {})\n{}", dir,
                                  spec.git_workdir ? dir + "/workdir, a clone of " + spec.git_workdir->url
                                                   : spec.workdir.value_or("the current directory"),
                                  wrapper_text(spec));
    auto section = [&](const char* name, const std::string& text) {
        if (!text.empty()) {
            out += fmt::format("\n# {}\n{}{}", name, text, text.back() == '\n' ? "" : "\n");
        }
    };
    section("setup.sh", spec.setup);
    section("run.sh", spec.run);
    out += "\n# environment added for the job (and the caller's own)\n";
    for (const auto& kv : environment(spec, placement, job_id, false)) {
        const bool added = kv.rfind("TANDEM_", 0) == 0 || kv.rfind("SKYPILOT_", 0) == 0;
        if (added && kv.rfind("TANDEM_HOME=", 0) != 0) {
            out += kv + "\n";
        }
    }
    for (const auto& [k, v] : spec.envs) {
        out += k + "=" + v + "\n";
    }
    for (const auto& [k, v] : spec.secrets) {
        out += k + "=<secret>\n";
    }
    return out;
}

Result<std::string> LocalBackend::submit(const TaskSpec& spec, const Placement& placement,
                                         std::int64_t job_id, const JobIdentity& identity) {
    (void)identity; // the job folder, named by tandem's id, is the local job's identity
    const fs::path dir = job_dir(job_id);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        return fail(ErrorKind::internal, fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    }
    // Secrets go only into the process environment, never into these files.
    const auto rw = fs::perms::owner_read | fs::perms::owner_write;
    const std::string wrapper = wrapper_text(spec);
    for (auto [name, text] : {std::pair{"wrapper.sh", std::string_view(wrapper)},
                              std::pair{"setup.sh", std::string_view(spec.setup)},
                              std::pair{"run.sh", std::string_view(spec.run)}}) {
        if (text.empty()) {
            continue;
        }
        if (auto ok = write_file(dir / name, text, rw | fs::perms::owner_exec); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    SpawnRequest request;
    request.argv = {"/bin/bash", (dir / "wrapper.sh").string()};
    request.env = environment(spec, placement, job_id, true);
    request.cwd = spec.workdir.value_or(fs::current_path(ec).string());
    request.log_file = (dir / "output.log").string();
    auto id = spawn_detached(request);
    if (!id) {
        return tl::unexpected(id.error());
    }
    if (auto ok = write_file(dir / "pid", fmt::format("{} {}\n", id->pid, id->start_ticks), rw); !ok) {
        return tl::unexpected(ok.error());
    }
    return std::to_string(id->pid);
}

Result<std::optional<std::string>> LocalBackend::find_submitted(const JobRecord& job) {
    if (auto id = process_of(job)) {
        return std::to_string(id->pid);
    }
    return std::nullopt;
}

std::optional<ProcessId> LocalBackend::process_of(const JobRecord& job) const {
    auto text = read_file(fs::path(job_dir(job.id)) / "pid");
    ProcessId id;
    std::istringstream in(text.value_or(""));
    if (!(in >> id.pid >> id.start_ticks)) {
        return std::nullopt;
    }
    return id;
}

JobUpdate LocalBackend::observe(const JobRecord& job) const {
    JobUpdate u;
    const fs::path dir = job_dir(job.id);
    if (fs::exists(dir / "cancelled")) {
        u.state = JobState::cancelled;
        u.reason = std::string(k_user_cancel_reason);
        u.ended_at = now_seconds();
        return u;
    }
    if (auto text = read_file(dir / "exit_code")) {
        int code = std::atoi(text->c_str());
        u.state = code == 0 ? JobState::succeeded : JobState::failed;
        u.exit_code = code;
        u.reason = fmt::format("exit code {}", code);
        std::error_code ec;
        auto written = fs::last_write_time(dir / "exit_code", ec);
        u.ended_at = ec ? now_seconds()
                        : std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::file_clock::to_sys(written).time_since_epoch())
                              .count();
        u.started_at = job.started_at.value_or(job.submitted_at);
        return u;
    }
    auto pid = process_of(job);
    if (pid && is_alive(*pid)) {
        u.state = JobState::running;
        u.started_at = job.started_at.value_or(job.submitted_at);
        return u;
    }
    // Re-read: the job may have finished between the two looks.
    if (fs::exists(dir / "exit_code")) {
        return observe(job);
    }
    u.state = JobState::failed;
    u.reason = "the job's process ended without recording an exit code (killed, or the machine restarted)";
    u.ended_at = now_seconds();
    return u;
}

Result<std::vector<JobUpdate>> LocalBackend::refresh(const std::vector<JobRecord>& jobs) {
    std::vector<JobUpdate> out;
    out.reserve(jobs.size());
    for (const auto& job : jobs) {
        out.push_back(observe(job));
    }
    return out;
}

// The job runs on this machine: its address is the host's name (what the other members of a group,
// on other systems, can reach), known once the job has started.
Result<std::optional<std::vector<std::string>>> LocalBackend::hosts(const JobRecord& job) {
    if (job.remote_id.empty() || !(job.state == JobState::running || job.state == JobState::starting)) {
        return std::optional<std::vector<std::string>>();
    }
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') {
        return std::optional<std::vector<std::string>>(std::vector<std::string>{"127.0.0.1"});
    }
    return std::optional<std::vector<std::string>>(std::vector<std::string>{name});
}

// Written beside the job's files and renamed into place: the waiting wrapper never reads half of it.
Status LocalBackend::publish(const JobRecord& job, const std::string& channel, const std::string& book) {
    (void)channel;
    const fs::path dir = job_dir(job.id);
    const fs::path tmp = dir / "group.env.tmp";
    if (auto ok = write_file(tmp, book, fs::perms::owner_read | fs::perms::owner_write); !ok) {
        return ok;
    }
    std::error_code ec;
    fs::rename(tmp, dir / "group.env", ec);
    if (ec) {
        return fail(ErrorKind::internal,
                    fmt::format("local: cannot write {}: {}", (dir / "group.env").string(), ec.message()));
    }
    return {};
}

Capabilities LocalBackend::capabilities() {
    Capabilities c;
    c.group_addresses = this;
    return c;
}

Status LocalBackend::cancel(const JobRecord& job) {
    // The marker makes observe() report CANCELLED, not FAILED, for a job that dies of our signal.
    if (auto ok = write_file(fs::path(job_dir(job.id)) / "cancelled", "",
                             fs::perms::owner_read | fs::perms::owner_write);
        !ok) {
        return ok;
    }
    auto pid = process_of(job);
    if (!pid || !is_alive(*pid)) {
        // The leader is gone; members of its group may still run.
        if (pid && group_alive(pid->pid)) {
            terminate_group(pid->pid, m_settings.cancel_grace);
        }
        return {};
    }
    terminate_group(pid->pid, m_settings.cancel_grace);
    return {};
}

Status LocalBackend::logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) {
    const std::string file = (fs::path(job_dir(job.id)) / "output.log").string();
    auto streamed =
        backends::stream_file(file, options, sink, [&] { return is_terminal(observe(job).state); });
    if (!streamed && streamed.error().kind == ErrorKind::not_found) {
        return fail(ErrorKind::not_found, fmt::format("job {} has no output file ({})", job.id, file));
    }
    return streamed;
}

} // namespace tandem::local
