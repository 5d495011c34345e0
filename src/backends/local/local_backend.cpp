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
#include "core/line_prefix.hpp"
#include "core/quantity.hpp"
#include "core/sweep.hpp"
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

// A sweep's driver (wrapper.sh): starts element.sh once per element, at most P at a time, each with its
// index in TANDEM_SWEEP_INDEX and its output in element-I.log (whose existence says it started), in a
// process group of its own (setsid; its id in element-I.pid) so one element can be cancelled alone; the
// element writes its exit code to element-I.exit. A cancel marks the folder first, so no element starts
// after it. The driver's own exit code: the first failed element's, else 0.
constexpr const char* k_sweep_driver = R"SH(#!/bin/bash
# tandem local sweep: @N@ elements, at most @P@ at a time.
d="$(cd "$(dirname "$0")" && pwd)"
n=@N@ p=@P@ i=0
while [ "$i" -lt "$n" ] && [ ! -e "$d/cancelled" ]; do
  while [ "$(jobs -pr | wc -l)" -ge "$p" ]; do wait -n; done
  [ -e "$d/cancelled" ] && break
  if [ ! -e "$d/element-$i.cancelled" ]; then
    TANDEM_SWEEP_INDEX=$i setsid /bin/bash "$d/element.sh" >"$d/element-$i.log" 2>&1 &
    echo "$!" >"$d/element-$i.pid"
  fi
  i=$((i + 1))
done
wait
rc=0 i=0
while [ "$i" -lt "$n" ]; do
  c=$(cat "$d/element-$i.exit" 2>/dev/null) || c=1
  if [ "$rc" -eq 0 ] && [ "$c" != 0 ]; then rc=$c; fi
  i=$((i + 1))
done
printf '%s\n' "$rc" > "$d/exit_code.tmp" && mv -f "$d/exit_code.tmp" "$d/exit_code"
exit "$rc"
)SH";

// The wrapper; a job group member first waits for the group's addresses (published into the job's
// directory); with a git workdir it then clones it into the job's directory and runs there. A sweep's
// element (element.sh) first takes its values by its index, clones into a folder of its own and writes
// its exit code to element-I.exit.
std::string wrapper_text(const TaskSpec& spec, bool element = false) {
    std::string text = k_wrapper;
    std::string git;
    if (element && spec.sweep) {
        git = sweep_shell_block(*spec.sweep, "${TANDEM_SWEEP_INDEX:-0}").value_or("");
    }
    if (!spec.group_channel.empty()) {
        git += group_wait_function() + "tandem_group_wait \"$d/group.env\" || rc=$?\n";
    }
    const std::string workdir = element ? "$d/workdir-$TANDEM_SWEEP_INDEX" : "$d/workdir";
    if (spec.git_workdir) {
        git +=
            git_checkout_function() + fmt::format("[ \"$rc\" -eq 0 ] && {{ tandem_git_checkout \"{0}\" && cd "
                                                  "\"{0}\" || rc=$?; }}\n",
                                                  workdir);
    }
    text.replace(text.find("@GIT@"), 5, git);
    if (element) {
        const std::string from = "\"$d/exit_code.tmp\" && mv -f \"$d/exit_code.tmp\" \"$d/exit_code\"";
        text.replace(text.find(from), from.size(),
                     "\"$d/element-$TANDEM_SWEEP_INDEX.tmp\" && mv -f \"$d/element-$TANDEM_SWEEP_INDEX.tmp\" "
                     "\"$d/element-$TANDEM_SWEEP_INDEX.exit\"");
    }
    return text;
}

std::string sweep_driver_text(const Sweep& sweep) {
    std::string text = k_sweep_driver;
    const auto n = std::to_string(sweep.size());
    const auto p = std::to_string(sweep.parallel > 0 ? std::min<std::size_t>(sweep.parallel, sweep.size())
                                                     : sweep.size());
    for (auto [key, value] : {std::pair{"@N@", n}, std::pair{"@P@", p}}) {
        for (auto at = text.find(key); at != std::string::npos; at = text.find(key)) {
            text.replace(at, 3, value);
        }
    }
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
    if (spec.sweep) {
        if (auto block = sweep_shell_block(*spec.sweep, "$TANDEM_SWEEP_INDEX"); !block) {
            return fail(ErrorKind::invalid_spec, "local: sweep: " + block.error());
        }
    }
    std::string out = fmt::format("# {}/wrapper.sh (cwd: {})\n{}", dir,
                                  spec.git_workdir ? dir + "/workdir, a clone of " + spec.git_workdir->url
                                                   : spec.workdir.value_or("the current directory"),
                                  spec.sweep ? sweep_driver_text(*spec.sweep) : wrapper_text(spec));
    if (spec.sweep) {
        out += fmt::format("\n# {}/element.sh\n{}", dir, wrapper_text(spec, true));
    }
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
    if (spec.sweep) {
        if (auto block = sweep_shell_block(*spec.sweep, "$TANDEM_SWEEP_INDEX"); !block) {
            return fail(ErrorKind::invalid_spec, "local: sweep: " + block.error());
        }
    }
    const std::string wrapper = spec.sweep ? sweep_driver_text(*spec.sweep) : wrapper_text(spec);
    const std::string element = spec.sweep ? wrapper_text(spec, true) : std::string();
    for (auto [name, text] : {std::pair{"wrapper.sh", std::string_view(wrapper)},
                              std::pair{"element.sh", std::string_view(element)},
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

// A sweep's elements from its folder: element-I.exit (ended), element-I.log (started), neither (waiting
// for a free slot). Once the driver is gone, an element that did not end was cancelled (the marker) or
// killed with it.
JobUpdate LocalBackend::observe_sweep(const JobRecord& job, const Sweep& sweep) const {
    const fs::path dir = job_dir(job.id);
    const bool cancelled = fs::exists(dir / "cancelled");
    const bool finished = fs::exists(dir / "exit_code");
    const auto pid = process_of(job);
    const bool alive = !finished && pid && is_alive(*pid);
    std::vector<ElementState> elements;
    elements.reserve(sweep.size());
    for (std::size_t i = 0; i < sweep.size(); ++i) {
        if (auto text = read_file(dir / fmt::format("element-{}.exit", i))) {
            const int code = std::atoi(text->c_str());
            elements.push_back({code == 0 ? JobState::succeeded : JobState::failed, code});
        } else if (fs::exists(dir / fmt::format("element-{}.cancelled", i))) {
            elements.push_back({JobState::cancelled, std::nullopt});
        } else if (alive && !cancelled) {
            const bool started = fs::exists(dir / fmt::format("element-{}.log", i));
            elements.push_back({started ? JobState::running : JobState::pending, std::nullopt});
        } else {
            elements.push_back({cancelled ? JobState::cancelled : JobState::failed, std::nullopt});
        }
    }
    JobUpdate u = sweep_update(sweep, elements,
                               sweep.parallel > 0
                                   ? fmt::format("at most {} run at once (sweep_parallel)", sweep.parallel)
                                   : std::string());
    u.started_at = job.started_at.value_or(job.submitted_at);
    if (cancelled && !alive) {
        u.state = JobState::cancelled;
        u.reason = std::string(k_user_cancel_reason) + "; " + u.reason;
    } else if (alive && is_terminal(u.state)) {
        u.state = JobState::running; // every element ended; the driver is writing the sweep's end
        u.reason = "completing; " + u.reason;
        u.exit_code.reset();
    }
    if (is_terminal(u.state)) {
        u.ended_at = now_seconds();
    }
    return u;
}

JobUpdate LocalBackend::observe(const JobRecord& job) const {
    if (auto sweep = sweep_of(job)) {
        return observe_sweep(job, *sweep);
    }
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
    c.element_cancel = this;
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
    } else {
        terminate_group(pid->pid, m_settings.cancel_grace);
    }
    if (auto sweep = sweep_of(job)) { // each element leads a process group of its own
        for (std::size_t i = 0; i < sweep->size(); ++i) {
            if (auto group = element_group(job, i); group && group_alive(*group)) {
                terminate_group(*group, m_settings.cancel_grace);
            }
        }
    }
    return {};
}

std::optional<int> LocalBackend::element_group(const JobRecord& job, std::size_t element) const {
    const auto text = read_file(fs::path(job_dir(job.id)) / fmt::format("element-{}.pid", element));
    const int pgid = text ? std::atoi(text->c_str()) : 0;
    return pgid > 1 ? std::optional<int>(pgid) : std::nullopt;
}

// The marker first: the driver starts no element that has one, and observe() reports it CANCELLED (its
// processes die of our signal before writing an exit code).
Status LocalBackend::cancel_element(const JobRecord& job, std::size_t element) {
    const fs::path dir = job_dir(job.id);
    if (fs::exists(dir / fmt::format("element-{}.exit", element))) {
        return {};
    }
    if (auto ok = write_file(dir / fmt::format("element-{}.cancelled", element), "",
                             fs::perms::owner_read | fs::perms::owner_write);
        !ok) {
        return ok;
    }
    if (auto group = element_group(job, element); group && group_alive(*group)) {
        terminate_group(*group, m_settings.cancel_grace);
    }
    return {};
}

Status LocalBackend::logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) {
    if (auto sweep = sweep_of(job)) { // element by element, each line labelled with its values
        auto which = log_elements(job.id, *sweep, options.element);
        if (!which) {
            return tl::unexpected(which.error());
        }
        bool reader_gone = false;
        for (const std::size_t i : *which) {
            LinePrefix prefix(options.element ? std::string() : "[" + sweep_element_label(*sweep, i) + "] ");
            const LogSink labelled = [&](std::string_view chunk) {
                const auto out = prefix.feed(chunk);
                reader_gone = reader_gone || (!out.empty() && !sink(out));
                return !reader_gone;
            };
            const auto file = (fs::path(job_dir(job.id)) / fmt::format("element-{}.log", i)).string();
            auto streamed = backends::stream_file(file, options, labelled, [&] {
                const auto states = parse_element_states(observe(job).elements.value_or(std::string()));
                return !states || i >= states->size() || is_terminal((*states)[i].state);
            });
            if (!streamed && streamed.error().kind != ErrorKind::not_found) {
                return streamed; // an element not started yet has no output to show
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
    const std::string file = (fs::path(job_dir(job.id)) / "output.log").string();
    auto streamed =
        backends::stream_file(file, options, sink, [&] { return is_terminal(observe(job).state); });
    if (!streamed && streamed.error().kind == ErrorKind::not_found) {
        return fail(ErrorKind::not_found, fmt::format("job {} has no output file ({})", job.id, file));
    }
    return streamed;
}

} // namespace tandem::local
