#pragma once
// The task spec: a SkyPilot-compatible task YAML, parsed and validated. Every value remembers where it
// came from (file:line:col) so that later checks (backend support, planner) can point at the user's text.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sweep.hpp"

namespace tandem {

struct SourceLoc {
    std::string file;
    int line = 0; // 1-based; 0 when the value came from the command line
    int column = 0;
};

// `4` (exactly) or `4+` (at least). Memory is held in GiB.
struct Quantity {
    double value = 0;
    bool at_least = false;
};

// One accelerator choice: `H100:8`, `A100:0.5`. count may be fractional (a shared or MIG slice).
struct Accelerator {
    std::string name; // as written by the user, e.g. "H100", "A100-80GB"
    double count = 1;
    bool fractional() const { return count < 1.0; }
};

// `infra: k8s/my-context`, `slurm/cluster/partition`, `local`.
struct InfraPin {
    std::string kind;    // "k8s", "slurm", "local" (the `kubernetes` spelling is normalised to "k8s")
    std::string cluster; // empty: any cluster of that kind
    std::string pool;    // empty: any pool (partition, node group)
};

// SkyPilot's resources.job_recovery: how a job that fails is run again. tandem asks the scheduler for it
// (Slurm: --requeue on node failure, user-code failures retried inside the allocation; Kubernetes:
// backoffLimit and podFailurePolicy), so a job recovers with no tandem process running.
struct JobRecovery {
    std::string strategy;                    // SkyPilot's EAGER_NEXT_REGION, FAILOVER; "" when unset
    int max_restarts_on_errors = 0;          // user-code failures (non-zero exit) run again this many times
    std::vector<int> recover_on_exit_codes;  // always run again, not counted (1-255)
    bool disabled = false;                   // `job_recovery: none`
};
// The most restarts tandem asks for (a bound on SkyPilot's unbounded integer).
inline constexpr int k_max_restarts_on_errors = 1000;

struct Resources {
    std::optional<InfraPin> infra;
    std::vector<Accelerator> accelerators; // empty: no accelerator
    bool accelerators_ordered = true;      // list (ordered preference) vs set (any)
    std::optional<Quantity> cpus;
    std::optional<Quantity> memory_gb;
    std::optional<double> disk_size_gb;
    std::optional<std::string> image_id;
    std::vector<std::string> ports;
    std::map<std::string, std::string> labels;
    std::optional<bool> use_spot;
    std::optional<JobRecovery> job_recovery;
    // SkyPilot fields tandem does not model but judges per backend (backend_support.cpp): disk_tier,
    // network_tier, autostop, local_disk, job_recovery, max_hourly_cost, priority, priority_class. Keyed
    // by the field's name, as written (JSON).
    std::map<std::string, nlohmann::json> hints;
    // Why no tandem backend can run this set (a cloud pinned, a cloud-only field): dotted field path ->
    // reason. An `any_of`/`ordered` entry with one is a rejection in `plan`; the task is refused only
    // when every option has one.
    std::map<std::string, std::string> cloud_only;
    // Where each field was written, keyed by its dotted path ("resources.accelerators").
    std::map<std::string, SourceLoc> locations;
};

struct SlurmSettings {
    std::optional<std::string> partition, account, qos, constraint, time;
    std::optional<std::string> cpu_partition; // SkyPilot's: the partition for tasks without GPUs
    // SkyPilot's sbatch_options: extra `#SBATCH --NAME=VALUE` lines (VALUE empty: a bare flag).
    std::vector<std::pair<std::string, std::string>> sbatch_options;
    std::optional<std::int64_t> provision_timeout_seconds; // the pending timeout on Slurm; -1: none
};

struct KubernetesSettings {
    std::optional<std::string> namespace_name, queue;
    std::optional<int> backoff_limit; // the Job's retries of a failed pod (default 0)
    nlohmann::json pod_config;        // null when absent
    std::optional<std::int64_t> provision_timeout_seconds; // the pending timeout on Kubernetes; -1: none
    // remote_identity: a ServiceAccount name, or {context: name}. SkyPilot's LOCAL_CREDENTIALS,
    // SERVICE_ACCOUNT and NO_UPLOAD mean the namespace's default ServiceAccount here (tandem uploads no
    // credentials and needs no rights inside the pod). null when absent.
    nlohmann::json remote_identity;
    nlohmann::json custom_metadata;               // {labels: {}, annotations: {}}; null when absent
    std::optional<double> pod_resource_limits;    // set_pod_resource_limits: limits = requests x this
};

// `workdir: {url, ref}`: cloned where the job runs, before setup, on every node.
struct GitWorkdir {
    std::string url;
    std::string ref; // branch, tag or commit; empty: the default branch
};

// A field tandem accepts but that has no effect here; `plan` lists these.
struct SpecNote {
    std::string field;
    SourceLoc loc;
    std::string note;
};

// One concrete way to run the task: a resource set with a single accelerator choice. Options in a lower
// tier are preferred absolutely (`ordered`, accelerator lists); options in one tier compete on score.
struct ResourceOption {
    Resources resources; // accelerators holds at most one entry
    int tier = 0;
    std::string label; // "H100:8", "any_of[1] A100:8", for plan output
};

// SkyPilot's `service:` section (sky serve): a task run as replicas behind one endpoint. On Kubernetes
// tandem makes it a Deployment, a Service and, with a replica_policy, a HorizontalPodAutoscaler
// (backends/k8s/serve_manifests.hpp). Defaults are SkyPilot's (sky/serve/service_spec.py, constants.py).
struct ReadinessProbe {
    std::string path = "/";               // starts with '/'
    std::int64_t initial_delay_seconds = 1200;
    std::int64_t timeout_seconds = 15;
    std::optional<nlohmann::json> post_data; // a POST probe with this JSON body; nullopt: GET
    std::vector<std::pair<std::string, std::string>> headers; // in file order
};

struct ServiceSpec {
    ReadinessProbe readiness_probe;
    int min_replicas = 1;                 // `replicas: N` or replica_policy.min_replicas
    std::optional<int> max_replicas;      // set (and > min) only with target_qps_per_replica
    std::optional<double> target_qps_per_replica;
    std::int64_t upscale_delay_seconds = 300;    // SkyPilot's defaults
    std::int64_t downscale_delay_seconds = 1200;
    bool has_replica_policy = false;      // written as replica_policy (not `replicas:`)
    std::optional<int> port;              // service.ports; else the single port of resources.ports
    std::optional<std::string> load_balancing_policy; // lower case, one of SkyPilot's names
    // tls: {keyfile, certfile}, resolved to absolute paths of files that exist.
    std::optional<std::pair<std::string, std::string>> tls;
    // The port the replicas serve on: `port`, else resources.ports when it names exactly one port.
    std::optional<int> serving_port(const Resources& resources) const;
};

struct TaskSpec {
    std::string source_file; // for messages
    std::string name;
    std::optional<std::string> workdir; // resolved to an absolute path
    std::optional<GitWorkdir> git_workdir; // instead of a local workdir
    int num_nodes = 1;
    Resources resources;                 // the top-level `resources` (base for any_of/ordered)
    std::vector<Resources> alternatives; // any_of / ordered entries, merged over the base
    bool alternatives_ordered = false;   // true for `ordered`, false for `any_of`
    std::vector<std::pair<std::string, std::string>> envs; // in file order, overrides applied
    std::vector<std::pair<std::string, std::string>> secrets;
    std::map<std::string, nlohmann::json> file_mounts;
    std::string setup;
    std::string run;
    SlurmSettings slurm;
    KubernetesSettings kubernetes;
    // `config.pending_timeout`: a job still waiting for resources after this long moves to the next
    // candidate (launch --pending-timeout overrides it).
    std::optional<std::int64_t> pending_timeout_seconds;
    std::map<std::string, SourceLoc> locations; // dotted path -> where it was written
    std::vector<SpecNote> notes;                 // accepted fields without effect anywhere
    // Set by launch for a member of a job group (never from YAML): the name of the channel through
    // which the group's address book reaches this member; its wrapper waits for the book before setup
    // (core/job_group.hpp). Empty: not a member, or a pipeline stage (no addresses to wait for).
    std::string group_channel;
    // The `service:` section; nullopt for a job (launch refuses a task with one: `tandem serve up`).
    std::optional<ServiceSpec> service;
    // `sweep:` / `sweep_parallel:` or `launch --sweep/--num-jobs/--sweep-parallel` (core/sweep.hpp): the
    // task runs once per element, as one job (a Slurm job array, a Kubernetes Indexed Job). nullopt: once.
    std::optional<Sweep> sweep;

    // The concrete options the planner chooses among, in preference order.
    std::vector<ResourceOption> options() const;
    // Where `path` was written, or the file itself when unknown.
    SourceLoc location_of(const std::string& path) const;
};

// JSON of the spec with every secret value replaced: what the store keeps and `--json` may show.
nlohmann::json to_redacted_json(const TaskSpec& spec);

} // namespace tandem
