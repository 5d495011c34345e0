#pragma once
// The composition root: paths, config, the job store and one backend per configured cluster, each made
// on first use so that `tandem --help` or a spec error costs no database or network work.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/spec_loader.hpp"
#include "store/job_store.hpp"

namespace tandem::cli {

class Context {
public:
    static Result<Context> create();
    // Called first thing: starts loading libcurl at once when the last Context of this state folder found
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

    LoadOptions load_options() const;

private:
    Paths m_paths;
    Config m_config;
    std::unique_ptr<store::JobStore> m_store;
    std::map<std::string, std::unique_ptr<Backend>> m_backends;
    std::vector<Backend*> m_abandoned; // deliberately leaked, see abandon()
};

// A job as the CLI shows it: the stored record, and whether its cluster could not be reached just now.
struct JobView {
    JobRecord record;
    bool unreachable = false;
    std::string unreachable_reason;
};

// Refreshes the non-terminal jobs among `jobs` with one backend call per cluster, stores what changed,
// and returns every job (in the same order) as it now stands.
std::vector<JobView> refresh_jobs(Context& ctx, std::vector<JobRecord> jobs);

// Reads job `id` or fails with not_found.
Result<JobRecord> find_job(Context& ctx, const std::string& id_text);

} // namespace tandem::cli
