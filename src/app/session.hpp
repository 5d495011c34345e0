#pragma once
// The engine's session: paths, config, the job store and one backend per configured cluster (each made
// on first use, so that `tandem --help` or a spec error costs no database or network work), built from
// injected seams: the environment, the clock, randomness, the working folder and files, the backend
// factory, fault points and an event sink. The app layer learns the time, makes tokens and reports
// progress only through these, so its state machines run in unit tests with a fake backend and a fake
// clock; only the CLI prints.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/registry.hpp"
#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/spec_loader.hpp"
#include "store/job_store.hpp"

namespace tandem::app {

// What happened, for whoever shows it (the CLI prints `tandem: TEXT` or `tandem: error: TEXT` on stderr).
struct Event {
    enum class Level { progress, error };
    Level level = Level::progress;
    std::string text;
};
using EventSink = std::function<void(const Event&)>;

using BackendMaker =
    std::function<Result<std::unique_ptr<Backend>>(const ClusterConfig&, const std::string& state_dir)>;

struct Seams {
    GetEnv getenv;
    std::function<std::int64_t()> now;        // unix seconds
    std::function<std::string()> new_token;   // submit tokens (JobRecord::submit_token)
    std::function<std::string()> current_dir; // relative workdirs resolve against it
    std::function<std::string()> host_name;   // the launching machine, in a job's identity
    FileAccess files;                         // task files, workdirs, file_mounts sources (core/files.hpp)
    BackendMaker make_backend;                // the registry's (backends::make_backend) in production
    std::function<void(std::string_view)> fault_point;
    EventSink events;
};

// The real ones: this process's environment, the system clock and randomness, the backend registry,
// TANDEM_FAULT points, and `events` for what happens.
Seams system_seams(EventSink events);

class Session {
public:
    // Resolves the paths and reads the config through the seams (the CLI's way in).
    static Result<Session> create(Seams seams);
    // A session over a given state folder and config (tests; the store is a real SQLite file there).
    Session(Paths paths, Config config, Seams seams);
    Session(Session&&) = default;
    Session& operator=(Session&&) = default;
    ~Session();

    // Called first thing: starts loading libcurl at once when the last session of this state folder found
    // a cluster that needs it (a marker file in STATE/cache), instead of after the config is parsed.
    static void warm_up();

    const Paths& paths() const { return m_paths; }
    const Config& config() const { return m_config; }
    std::vector<BackendKind> configured_kinds() const;

    Result<store::JobStore*> store();
    Result<Backend*> backend(const std::string& cluster);
    // Every configured cluster's backend, or the first configuration error.
    Result<std::vector<Backend*>> backends();
    // How long a fan-out waits for this cluster: twice its `timeout_seconds` (default 30) plus 5 s, so
    // the backend's own timeout, with its retry, normally answers first.
    std::chrono::steady_clock::duration deadline(const std::string& cluster) const;
    // Gives up on a backend still busy on another thread: it is never destroyed (that thread may still
    // use it), and the next backend(cluster) makes a new one.
    void abandon(const std::string& cluster);
    // A cluster found unreachable in this invocation (discovery timed out on it): later refreshes mark
    // its jobs UNKNOWN with `why` at once instead of waiting for the same timeout again.
    void mark_unreachable(const std::string& cluster, std::string why);
    const std::string* unreachable(const std::string& cluster) const;

    LoadOptions load_options() const;
    const GetEnv& getenv() const { return m_seams.getenv; }
    std::int64_t now() const { return m_seams.now(); }
    std::string new_token() const { return m_seams.new_token(); }
    std::string host_name() const { return m_seams.host_name ? m_seams.host_name() : std::string(); }
    void fault_point(std::string_view point) const;
    // The fault-point seam itself, for a fan-out task that must own what it calls.
    std::function<void(std::string_view)> fault_points() const { return m_seams.fault_point; }
    void progress(std::string text) const;
    void error(std::string text) const;

private:
    Paths m_paths;
    Config m_config;
    Seams m_seams;
    std::unique_ptr<store::JobStore> m_store;
    std::map<std::string, std::unique_ptr<Backend>> m_backends;
    std::vector<Backend*> m_abandoned; // deliberately leaked, see abandon()
    std::map<std::string, std::string> m_unreachable;
};

// `backend`'s capability (`&Capabilities::exec`...), or the one-line refusal saying the cluster lacks it.
template <class C>
Result<C*> require(Backend& backend, C* Capabilities::*member, Capability which, std::int64_t job_id = 0) {
    if (C* offered = backend.capabilities().*member) {
        return offered;
    }
    return tl::unexpected(backends::capability_refusal(backend, which, job_id));
}

// The capability of `cluster`'s backend, or why it cannot be had.
template <class C>
Result<C*> require(Session& session, const std::string& cluster, C* Capabilities::*member, Capability which,
                   std::int64_t job_id = 0) {
    auto backend = session.backend(cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    return require(**backend, member, which, job_id);
}

} // namespace tandem::app
