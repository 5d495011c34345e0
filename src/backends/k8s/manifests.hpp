#pragma once
// The native artifacts of a Kubernetes job: a batch/v1 Job (one per task; an Indexed Job for num_nodes > 1
// where the server has them, else one single-pod Job per rank), a headless Service for stable pod host
// names when num_nodes > 1, and a Secret holding the task's `secrets:` (the Job only references it, so no
// secret value is ever part of the Job spec). Pure: `tandem plan` prints exactly what submit creates.
//
// The container runs `/bin/bash -c <node program> tandem-node SETUP RUN`: setup, then run only if setup
// exited 0, with the same TANDEM_*/SKYPILOT_* variables as on Slurm. Kubernetes expands `$(NAME)` in env
// values, command and args, so every `$` of user text is written as `$$` (which it turns back into `$`).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/inventory.hpp"
#include "core/planner.hpp"
#include "core/spec.hpp"
#include "core/sweep.hpp"

namespace tandem::k8s {

// What the API server offers, from GET /version.
struct ServerFeatures {
    int major = 1;
    int minor = 20;
    bool indexed_jobs() const { return major > 1 || minor >= 22; }       // on by default from 1.22
    bool ttl_after_finished() const { return major > 1 || minor >= 21; } // beta, on by default from 1.21
    // podFailurePolicy and the DisruptionTarget pod condition: beta, on by default from 1.26.
    bool pod_failure_policy() const { return major > 1 || minor >= 26; }
    // backoffLimitPerIndex: beta, on by default from 1.29; each index of an Indexed Job fails on its own.
    bool backoff_limit_per_index() const { return major > 1 || minor >= 29; }
};
// "v1.20.2", "v1.27.3-gke.100" -> {1, 20}; nullopt when unreadable.
std::optional<ServerFeatures> parse_server_version(const nlohmann::json& version);

// Where the GPUs come from: the resource name a container requests and the GPU product its node must
// have. The product is a pool name (a product label value); the pod's node affinity accepts it under any
// of the product labels the inventory reads (k_gpu_product_labels), so it does not matter which one a
// cluster's nodes carry.
struct GpuRequest {
    std::string resource; // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"
    int count = 0;        // per pod
    std::string product;  // "NVIDIA-H100-80GB-HBM3"; empty: any node with the resource
};
// The GPU request for `want` on `pool`: whole GPUs as nvidia.com/gpu; a fraction as the smallest MIG slice
// that holds it (a `Ng.*` profile is N sevenths of the GPU) or one time-sliced share. nullopt: no fit.
// The product is the pool's name unless the pool is one of unlabelled GPU nodes ("gpu").
std::optional<GpuRequest> choose_gpu_request(const Accelerator& want, const Pool& pool);

// A local workdir and file_mounts on Kubernetes (k8s_upload.cpp): every pod gets an emptyDir volume at
// k_upload_root and an init container, k_upload_container, that waits there until tandem has sent the
// files over exec (one tar stream per pod) and marked them complete; the main container then copies each
// mount to its destination and runs in the workdir.
inline constexpr std::string_view k_upload_root = "/tandem";
inline constexpr std::string_view k_upload_container = "tandem-upload";
inline constexpr std::string_view k_upload_complete = "/tandem/.tandem-complete";
struct PodUpload {
    bool workdir = false; // at k_upload_root/workdir
    struct Mount {
        std::string destination; // as the task wrote it
        std::string staged;      // where the pod receives it: k_upload_root/mounts/<k>[/<file name>]
        std::string file_name;   // a single file's name in its staging folder; empty for a folder
    };
    std::vector<Mount> mounts; // the task's local file_mounts, in order
    int wait_seconds = 600;    // the init container gives up after this long without the files
    // A PersistentVolumeClaim mounted in the upload container at k_upload_cache: units it holds (by
    // content hash) are copied from there instead of sent again. Empty: no cache.
    std::string cache_claim;
};
inline constexpr std::string_view k_upload_cache = "/tandem-cache";

struct JobPlan {
    std::int64_t tandem_id = 0;
    std::string base_name;    // DNS-1123 label; the Job name (or the per-rank Jobs' prefix) and Service name
    std::string submit_token; // random; a label, so a retried create is recognised as ours
    std::string user;         // tandem.dev/user (a label value); empty on a render
    std::string group_token;  // tandem.dev/group: a member's group's token
    std::string identity;     // the tandem.dev/identity annotation; empty on a render
    std::string namespace_name;
    std::string image;
    int num_nodes = 1;
    bool indexed = false; // one Indexed Job; false with num_nodes > 1: one Job per rank
    int backoff_limit = 0; // without job_recovery: config.kubernetes.backoff_limit, else 0
    // resources.job_recovery: backoffLimit = max_restarts_on_errors (unless config.kubernetes.backoff_limit
    // says otherwise); with pod_failure_policy, a podFailurePolicy that ignores disruptions (eviction,
    // preemption, node loss) and the recover_on_exit_codes, so neither counts against it.
    std::optional<JobRecovery> recovery;
    bool pod_failure_policy = false;
    std::optional<int> ttl_seconds_after_finished;
    std::optional<GpuRequest> gpu;
    std::optional<double> cpus;      // request
    std::optional<double> memory_gb; // request (and limit when memory_exact)
    bool memory_exact = false;       // `memory: 16` (not 16+): the request is also the limit
    std::optional<double> limits_factor; // set_pod_resource_limits: cpu and memory limits = requests x this
    std::string service_account;         // remote_identity resolved for this context; empty: the default
    std::string priority_class;          // resources.priority_class
    std::optional<PodUpload> upload;     // a local workdir or file_mounts to send
    // A sweep: one Indexed Job, completion index = element (completions N, parallelism P, the element's
    // values chosen by its index in the pod's program). With per_index_backoff (1.29+) each element has
    // its own backoffLimitPerIndex and the others run on when one fails; before, backoffLimit counts every
    // element's failures and the first one past it fails the Job, which stops the rest.
    std::optional<Sweep> sweep;
    bool per_index_backoff = false;
};

// The most bytes a sweep's values may take in one Job's pod program: etcd takes objects up to 1.5 MiB,
// and the Job's pod template is copied into each of its pods.
inline constexpr std::size_t k_max_sweep_program_bytes = 256 * 1024;

// SkyPilot's remote_identity for `context`: a ServiceAccount name, or the one its {context: name}
// mapping gives; empty for the namespace's default (absent, LOCAL_CREDENTIALS, SERVICE_ACCOUNT,
// NO_UPLOAD, or a mapping without this context).
std::string service_account_for(const nlohmann::json& remote_identity, const std::string& context);

struct Manifests {
    std::optional<nlohmann::json> secret;  // created last, owned by the first Job
    std::vector<nlohmann::json> jobs;      // one, or one per rank
    std::optional<nlohmann::json> service; // headless, for num_nodes > 1
};

// "train-42-x7k2p": the spec name made a DNS-1123 label (lower case, [a-z0-9-], starts with a letter),
// cut so pod names and host names built from it stay within 63 characters.
std::string job_base_name(const std::string& spec_name, std::int64_t tandem_id, const std::string& token);

// The manifests of `plan`. With mask_secrets the Secret's values are "<redacted>" (for `plan` output).
// Refuses (invalid_spec) what the API would refuse later: a secret name that is no valid Secret key, an
// env name with '=' or a NUL, a pod_config that is not a mapping of the right shapes.
Result<Manifests> render_manifests(const TaskSpec& spec, const JobPlan& plan, bool mask_secrets);

// The manifests as one multi-document YAML text, in creation order, for `tandem plan`.
std::string to_yaml(const Manifests& manifests);
std::string to_yaml_documents(const std::vector<const nlohmann::json*>& docs);

// The pod template of `plan`'s single Job, pod_config merged (what a service's Deployment runs), and the
// Secret of the task's `secrets:` (named "<base>-secrets"): the pieces serve_manifests.cpp reuses.
// Every `$` doubled: the kubelet turns `$$` back into `$` and expands `$(NAME)` in env values, container
// command and args, and exec probe commands.
std::string escape_kubelet_expansion(std::string_view text);
Result<nlohmann::json> task_pod_template(const TaskSpec& spec, const JobPlan& plan);
Result<nlohmann::json> secret_manifest(const TaskSpec& spec, const JobPlan& plan, bool mask_secrets);

// A Job's name for rank `rank` of `plan` (the base name itself for a single or Indexed Job).
std::string job_name(const JobPlan& plan, int rank);

// The label selector that lists every object of one tandem job ("tandem.dev/job=<base>").
std::string job_selector(const std::string& base_name);
// A job group member's address book: the key of its ConfigMap (named by the member's channel), and the
// file the pod's wrapper waits for.
inline constexpr std::string_view k_group_book_key = "hosts.env";
// The ConfigMap that carries a job group's address book to one member (labelled as the member's job,
// so its cancel removes it).
nlohmann::json group_book_configmap(const std::string& base_name, const std::string& channel,
                                    const std::string& book);
// The label selector that lists every tandem object of a namespace.
std::string managed_selector();

} // namespace tandem::k8s
