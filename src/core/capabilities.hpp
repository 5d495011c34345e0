#pragma once
// What some backends can do beyond the job interface (core/backend.hpp), each its own narrow interface
// (docs/ARCHITECTURE.md, "Capabilities"). A backend hands out the ones it has through
// Backend::capabilities(); an absent one is a null pointer, which the caller turns into a one-line refusal
// with a hint (backends/registry.hpp, capability_refusal). No capability has a default that fails at run
// time: a backend that cannot do something does not offer it.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/identity.hpp"
#include "core/job.hpp"
#include "core/planner.hpp"
#include "core/service.hpp"
#include "core/spec.hpp"

namespace tandem {

struct LogOptions {
    bool follow = false;
    std::optional<int> tail_lines;
    std::optional<int> node; // one rank only; default all
    std::optional<int> element =
        std::nullopt; // a sweep's element only (its index); default all, each line labelled
};

// Receives log bytes as they arrive; returning false stops the stream (the reader went away).
using LogSink = std::function<bool(std::string_view)>;

// Receives one update per watched job, in order, each time something may have changed; returning false
// ends the watch.
using WatchSink = std::function<bool(const std::vector<JobUpdate>&)>;

// `tandem exec` / `tandem shell`: a command (empty: the user's login shell) run beside a running job, on
// the node of rank `node`.
struct ExecRequest {
    std::vector<std::string> command;
    int node = 0;
    bool tty = false; // a pseudo-terminal (shell): stdout and stderr come together
};

struct TtySize {
    int columns = 80;
    int rows = 24;
};

// Where an exec's bytes go: `input_fd` (-1: none) is forwarded until its end; `resized` is asked for a
// new terminal size between reads.
struct ExecIo {
    int input_fd = -1;
    std::function<void(std::string_view)> out;
    std::function<void(std::string_view)> err;
    TtySize size;
    std::string term = "xterm";
    std::function<std::optional<TtySize>()> resized;
};

// `tandem exec` and `tandem shell`: runs `request` beside the running `job` and returns the command's exit
// status.
class Exec {
public:
    virtual ~Exec() = default;
    virtual Result<int> exec(const JobRecord& job, const ExecRequest& request, ExecIo& io) = 0;
};

// `tandem attach`: streams the running `job`'s output on rank `node` from now on until its program ends
// (Kubernetes: pods/attach), and returns the program's exit code.
class Attach {
public:
    virtual ~Attach() = default;
    virtual Result<int> attach(const JobRecord& job, int node, ExecIo& io) = 0;
};

// Job groups (core/job_group.hpp): the members' addresses and the channel that delivers the book.
class GroupAddresses {
public:
    virtual ~GroupAddresses() = default;
    // The addresses of a started job's ranks, in rank order (Slurm: node names; Kubernetes: pod IPs;
    // local: this host), or nullopt while they are not all known.
    virtual Result<std::optional<std::vector<std::string>>> hosts(const JobRecord& job) = 0;
    // Delivers the group's address book to `job`, through the channel its wrapper waits on (`channel` is
    // the member's TaskSpec::group_channel). Publishing twice is harmless.
    virtual Status publish(const JobRecord& job, const std::string& channel, const std::string& book) = 0;
    // Removes what publish() left on the cluster once the group has ended (nothing where the channel goes
    // with the job).
    virtual Status unpublish(const JobRecord& job, const std::string& channel) = 0;
};

// Services (`tandem serve`, core/service.hpp). serve_up creates the native objects of `spec` (which has a
// `service:` section) as `ref` (an empty namespace: the cluster's); serve_update rolls the running service
// to `spec` as `version`.
class Services {
public:
    virtual ~Services() = default;
    virtual Result<ServeOutcome> serve_up(const TaskSpec& spec, const Placement& placement,
                                          const ServiceRef& ref) = 0;
    virtual Result<ServeOutcome> serve_update(const TaskSpec& spec, const Placement& placement,
                                              const ServiceRef& ref, int version) = 0;
    // One view per service, in order, from one request per kind of object; with `replicas`, each view
    // lists its pods.
    virtual Result<std::vector<ServiceView>> serve_status(const std::vector<ServiceRef>& services,
                                                          bool replicas) = 0;
    // Removes every object of the service; true when something was there.
    virtual Result<bool> serve_down(const ServiceRef& ref) = 0;
    // Every replica's output, each line prefixed "[replica K] "; with follow, until the reader stops.
    virtual Status serve_logs(const ServiceRef& ref, const LogOptions& options, const LogSink& sink) = 0;
};

// A change feed (Kubernetes' watch API): follows `jobs` until `sink` returns false, the first call at
// once, then at each change. Without it, `status -w` refreshes every 2 s.
class Watch {
public:
    virtual ~Watch() = default;
    virtual Status watch(const std::vector<JobRecord>& jobs, const WatchSink& sink) = 0;
};

// A job a cluster holds that carries tandem's identity (core/identity.hpp), as one list call found it.
struct FoundJob {
    std::string remote_id; // as submit() returned it
    // Whose job it is in the cluster's own words: Slurm's user of the job, never the comment's claim.
    // Kubernetes keeps no creator on an object: there the namespace (which the caller can read) is the
    // cluster's word, and the owner is the launching user's label.
    std::string owner;
    // The cluster itself says the caller owns it (Slurm: the job is listed as the user's; Kubernetes: its
    // user label names the caller in a namespace the caller reads). Only such a job is adopted.
    bool callers = false;
    JobIdentity identity; // what the object says of itself: untrusted
    JobUpdate update;     // its state now
    std::int64_t submitted_at = 0;
    int num_nodes = 1;
};

struct Discovered {
    std::string me;              // the cluster's notion of the caller (Slurm user; Kubernetes user)
    std::vector<FoundJob> jobs;  // in the cluster's order
    std::size_t unreadable = 0;  // objects whose identity did not decode, left out
    std::string history;         // what the cluster no longer shows ("jobs that ended over 5 min ago")
};

// Discovery (issue 31): every job tandem made that the cluster still holds, whoever launched it and from
// wherever, from one list call per cluster.
class Discovery {
public:
    virtual ~Discovery() = default;
    // The caller's jobs (Slurm: the user's; Kubernetes: the user label), or with `all_users` everyone's.
    virtual Result<Discovered> discover(bool all_users) = 0;
};

// `cancel ID --element K`: one element of a sweep, natively (Slurm: scancel <array id>_<K>; local: the
// element's processes). Kubernetes has none: an Indexed Job cannot stop one of its indexes (deleting the
// index's pod only makes the Job controller start another).
class ElementCancel {
public:
    virtual ~ElementCancel() = default;
    virtual Status cancel_element(const JobRecord& job, std::size_t element) = 0;
};

// The capabilities one backend offers; null where it has none. A new capability is one interface above
// and one member here.
struct Capabilities {
    Exec* exec = nullptr;
    Attach* attach = nullptr;
    GroupAddresses* group_addresses = nullptr;
    Services* services = nullptr;
    Watch* watch = nullptr;
    Discovery* discovery = nullptr;
    ElementCancel* element_cancel = nullptr;
};

// Names the capability in refusals ("local cannot <what>").
enum class Capability { exec, attach, group_addresses, services, watch, discovery, element_cancel };

} // namespace tandem
