#pragma once
// The Kubernetes backend: batch/v1 Jobs over the API server's REST API, for one kubeconfig context.
// remote_id is "<namespace>/<base name>"; every object of a job carries the label tandem.dev/job=<base>,
// so status lists all tandem Jobs and pods of a namespace in one request each, logs find the pods of a
// job, and cancel deletes everything of it (Jobs with propagationPolicy Background, so no pod is left).
// The server version (GET /version) is cached in the state folder: it decides Indexed Jobs and TTL.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/k8s/k8s_settings.hpp"
#include "backends/k8s/kube_api.hpp"
#include "backends/k8s/manifests.hpp"
#include "backends/k8s/serve_manifests.hpp"
#include "backends/upload/upload_set.hpp"
#include "core/backend.hpp"

namespace tandem::k8s {

// The streams of one exec: stdin from a descriptor (until its end) or from `produce` (pulled until it
// gives 0 bytes), stdout and stderr to the callbacks.
struct PodExecIo {
    int input_fd = -1;
    std::function<Result<std::size_t>(char* buffer, std::size_t capacity)> produce;
    std::function<void(std::string_view)> out;
    std::function<void(std::string_view)> err;
    TtySize size;
    std::function<std::optional<TtySize>()> resized;
};

// `name` fit for a file name (a cluster "k8s/ctx", a remote id "ns/name").
std::string safe_file_part(std::string name);

// The API paths of a namespace's Jobs and of its core objects ("services", "secrets", "configmaps").
std::string jobs_path(const std::string& ns);
std::string core_path(const std::string& ns, const char* kind);

class K8sBackend final : public Backend,
                         public Exec,
                         public Attach,
                         public GroupAddresses,
                         public Services,
                         public Watch,
                         public Discovery {
public:
    K8sBackend(std::string cluster, K8sSettings settings, KubeContext context, std::string state_dir,
               HttpFactory http);

    const std::string& cluster() const override { return m_cluster; }
    BackendKind kind() const override { return BackendKind::kubernetes; }
    Result<std::string> check() override;
    Result<ClusterInventory> inventory(std::chrono::seconds max_age = std::chrono::seconds(0)) override;
    Result<std::string> render(const TaskSpec& spec, const Placement& placement,
                               std::int64_t job_id) override;
    Result<std::string> submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                               const JobIdentity& identity) override;
    // Who the caller is on this cluster: config `user:`, else the kubeconfig context's user entry.
    std::string user() const;
    Result<std::optional<std::string>> find_submitted(const JobRecord& job) override;
    Result<std::vector<JobUpdate>> refresh(const std::vector<JobRecord>& jobs) override;
    Status cancel(const JobRecord& job) override;
    Status logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) override;
    Capabilities capabilities() override;
    Result<std::optional<std::vector<std::string>>> hosts(const JobRecord& job) override;
    Result<int> exec(const JobRecord& job, const ExecRequest& request, ExecIo& io) override;
    Result<int> attach(const JobRecord& job, int node, ExecIo& io) override;
    Status publish(const JobRecord& job, const std::string& channel, const std::string& book) override;
    // The book goes with the job: nothing to remove.
    Status unpublish(const JobRecord&, const std::string&) override { return {}; }
    // The pods of the jobs' namespace through the watch API (k8s_watch.cpp).
    Status watch(const std::vector<JobRecord>& jobs, const WatchSink& sink) override;
    // The namespace's tandem Jobs, the caller's by tandem.dev/user (k8s_discovery.cpp).
    Result<Discovered> discover(bool all_users) override;
    // Services (k8s_serve.cpp, serve_manifests.hpp; logs in k8s_logs.cpp).
    Result<ServeOutcome> serve_up(const TaskSpec& spec, const Placement& placement,
                                  const ServiceRef& ref) override;
    Result<ServeOutcome> serve_update(const TaskSpec& spec, const Placement& placement, const ServiceRef& ref,
                                      int version) override;
    Result<std::vector<ServiceView>> serve_status(const std::vector<ServiceRef>& services,
                                                  bool replicas) override;
    Result<bool> serve_down(const ServiceRef& ref) override;
    Status serve_logs(const ServiceRef& ref, const LogOptions& options, const LogSink& sink) override;

private:
    Result<ServerFeatures> features();
    // What the pods receive from this machine (k8s_upload.cpp); nullopt when nothing.
    Result<std::optional<PodUpload>> pod_upload(const TaskSpec& spec) const;
    // Sends the files to every rank's upload container once it runs (k8s_upload.cpp).
    Status send_uploads(const TaskSpec& spec, const JobPlan& plan, const upload::UploadSet& set);
    // Which of the set's units the upload cache seen from `pod` holds (k8s_upload.cpp).
    Result<std::set<std::string>> cached_units(const std::string& ns, const std::string& pod,
                                               const upload::UploadSet& set);
    // `entries` as a tar stream to `command`'s stdin in the pod's upload container; the bytes sent.
    Result<std::uint64_t> stream_to_pod(const std::string& ns, const std::string& pod,
                                        std::vector<upload::TarEntry> entries,
                                        const std::vector<std::string>& command, const std::string& what,
                                        std::uint64_t bytes);
    // `command` in a container of a pod, over pods/exec (k8s_exec.cpp); with `subresource` "attach",
    // the container's own streams (no command).
    Result<int> exec_in_pod(const std::string& ns, const std::string& pod, const std::string& container,
                            const std::vector<std::string>& command, bool tty, PodExecIo& io,
                            std::string_view subresource = "exec");
    // The running pod of a job's rank and its main container, or why there is none.
    Result<std::pair<std::string, std::string>> running_pod(const JobRecord& job, const std::string& ns,
                                                            const std::string& base, int rank);
    Result<ServePlan> serve_plan(const TaskSpec& spec, const Placement& placement, const std::string& name,
                                 int version);
    // What `plan` shows for a task with `service:`: the service's objects (named after the task).
    Result<std::string> render_service(const TaskSpec& spec, const Placement& placement);
    Result<JobPlan> job_plan(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                             const std::string& token = {});
    Status create(const std::string& path, const nlohmann::json& object, const std::string& token,
                  nlohmann::json* created);
    std::string namespace_for(const TaskSpec& spec) const;
    // The pods of one job, listed now: every pod of each rank, oldest first (a retried or replaced rank has
    // several); and the newest per rank.
    Result<std::map<int, std::vector<nlohmann::json>>> rank_attempts(const std::string& ns, const std::string& base);
    Result<std::map<int, nlohmann::json>> rank_pods(const std::string& ns, const std::string& base);
    Status follow_pod(const std::string& ns, const std::string& base, int rank, const LogOptions& options,
                      const LogSink& sink, const std::string& prefix);

    std::string m_cluster;
    K8sSettings m_settings;
    KubeApi m_api;
    std::string m_version_file;
    std::string m_inventory_file;
    // A marker per Job this tandem deleted (cancel): a Job gone with its marker was cancelled, also when
    // the cancel that deleted it was killed before it could record so.
    std::string m_cancelled_dir;
    std::optional<ServerFeatures> m_features;
    std::optional<ClusterInventory> m_inventory;
};

// "<namespace>/<base>" -> {namespace, base}; a remote_id without '/' is in `fallback_ns`.
std::pair<std::string, std::string> split_remote_id(const std::string& remote_id,
                                                    const std::string& fallback_ns);

} // namespace tandem::k8s
