#include "backends/k8s/k8s_backend.hpp"

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include <fmt/format.h>

#include "backends/inventory_cache.hpp"
#include "backends/k8s/job_state.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/labels.hpp"
#include "backends/k8s/node_inventory.hpp"
#include "core/job_group.hpp"
#include "sys/clock.hpp"
#include "sys/fault_point.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

constexpr std::int64_t k_version_cache_seconds = 3600;

using sys::now_seconds;

std::string random_token() {
    return sys::random_token(5);
}

json read_json_file(const std::string& path) {
    std::ifstream in(path);
    return in ? json::parse(in, nullptr, false) : json();
}

void write_json_file(const std::string& path, const json& j) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    // Written whole and renamed, so a concurrent reader never sees half a file.
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    std::ofstream(tmp) << j;
    std::filesystem::rename(tmp, path, ec);
}

} // namespace

std::string safe_file_part(std::string name) {
    for (char& c : name) {
        if (c == '/' || c == ' ') {
            c = '_';
        }
    }
    return name;
}

std::string jobs_path(const std::string& ns) {
    return fmt::format("/apis/batch/v1/namespaces/{}/jobs", ns);
}

std::string core_path(const std::string& ns, const char* kind) {
    return fmt::format("/api/v1/namespaces/{}/{}", ns, kind);
}

std::pair<std::string, std::string> split_remote_id(const std::string& remote_id,
                                                    const std::string& fallback_ns) {
    const auto slash = remote_id.find('/');
    if (slash == std::string::npos) {
        return {fallback_ns, remote_id};
    }
    return {remote_id.substr(0, slash), remote_id.substr(slash + 1)};
}

K8sBackend::K8sBackend(std::string cluster, K8sSettings settings, KubeContext context, std::string state_dir,
                       HttpFactory http)
    : m_cluster(std::move(cluster)), m_settings(std::move(settings)),
      m_api(m_cluster, std::move(context), std::move(http), m_settings.timeout),
      m_version_file(state_dir + "/cache/k8s-version-" + safe_file_part(m_cluster) + ".json"),
      m_inventory_file(state_dir + "/cache/k8s-inventory-" + safe_file_part(m_cluster) + ".json"),
      m_cancelled_dir(state_dir + "/cache/k8s-cancelled-" + safe_file_part(m_cluster)) {
    if (m_settings.namespace_name.empty()) {
        m_settings.namespace_name =
            m_api.context().namespace_name.empty() ? "default" : m_api.context().namespace_name;
    }
}

Result<ServerFeatures> K8sBackend::features() {
    if (m_features) {
        return *m_features;
    }
    const auto& server = m_api.context().server;
    auto cached = read_json_file(m_version_file);
    if (cached.is_object() && cached.value("server", "") == server &&
        now_seconds() - cached.value("at", std::int64_t{0}) < k_version_cache_seconds) {
        if (auto f = parse_server_version(cached.value("version", json()))) {
            m_features = *f;
            return *f;
        }
    }
    auto version = m_api.call("GET", "/version");
    if (!version) {
        return tl::unexpected(version.error());
    }
    auto f = parse_server_version(version->body);
    if (!f) {
        return fail(ErrorKind::remote,
                    fmt::format("{}: the API server at {} sent a /version without a version: {}", m_cluster,
                                server, version->body.dump().substr(0, 120)));
    }
    write_json_file(m_version_file, {{"server", server}, {"at", now_seconds()}, {"version", version->body}});
    m_features = *f;
    return *f;
}

Result<std::string> K8sBackend::check() {
    auto version = m_api.call("GET", "/version");
    if (!version) {
        return tl::unexpected(version.error());
    }
    // /version answers anyone; listing pods proves the credentials and the RBAC rights.
    auto pods = m_api.call("GET", core_path(m_settings.namespace_name, "pods") + "?limit=1");
    if (!pods) {
        return tl::unexpected(pods.error());
    }
    const auto& ctx = m_api.context();
    return fmt::format("API server {} at {}, context {}, namespace {}{}",
                       version->body.value("gitVersion", "?"), ctx.server, ctx.name,
                       m_settings.namespace_name, ctx.user_name.empty() ? "" : ", user " + ctx.user_name);
}

Result<ClusterInventory> K8sBackend::inventory(std::chrono::seconds max_age) {
    if (max_age.count() > 0) {
        if (auto cached = backends::read_inventory_cache(m_inventory_file, m_api.context().server, m_cluster,
                                                         BackendKind::kubernetes, max_age)) {
            m_inventory = *cached;
            return *cached;
        }
    }
    auto nodes = m_api.call("GET", "/api/v1/nodes");
    if (!nodes) {
        return tl::unexpected(nodes.error());
    }
    const std::string active =
        "?fieldSelector=" + query_escape("status.phase!=Succeeded,status.phase!=Failed");
    auto pods = m_api.call("GET", "/api/v1/pods" + active, {}, {403});
    if (!pods) {
        return tl::unexpected(pods.error());
    }
    if (pods->status == 403) {
        // Users limited to a namespace cannot list every pod: count what this namespace uses. Free GPUs
        // may then be overstated; the scheduler still has the last word (the job waits as PENDING).
        pods = m_api.call("GET", core_path(m_settings.namespace_name, "pods") + active);
        if (!pods) {
            return tl::unexpected(pods.error());
        }
    }
    ClusterInventory inv = pools_from(m_cluster, nodes->body, pods->body);
    m_inventory = inv;
    backends::write_inventory_cache(m_inventory_file, m_api.context().server, inv);
    return inv;
}

std::string K8sBackend::namespace_for(const TaskSpec& spec) const {
    return spec.kubernetes.namespace_name ? *spec.kubernetes.namespace_name : m_settings.namespace_name;
}

Result<JobPlan> K8sBackend::job_plan(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                     const std::string& token) {
    auto f = features();
    if (!f) {
        return tl::unexpected(f.error());
    }
    if (!m_inventory) {
        if (auto inv = inventory(std::chrono::seconds(30)); !inv) {
            return tl::unexpected(inv.error());
        }
    }
    const Pool* pool = find_pool(*m_inventory, placement.pool);
    if (pool == nullptr) {
        return fail(ErrorKind::remote, fmt::format("{}: node pool {} is gone", m_cluster, placement.pool));
    }
    const auto options = spec.options();
    const auto& resources = options.at(static_cast<std::size_t>(placement.option_index)).resources;
    JobPlan plan;
    plan.tandem_id = job_id;
    plan.submit_token = token.empty() ? random_token() : token;
    plan.base_name = job_base_name(spec.name, job_id, plan.submit_token);
    plan.namespace_name = namespace_for(spec);
    plan.image = resources.image_id ? *resources.image_id : m_settings.image;
    if (plan.image.rfind("docker:", 0) == 0) { // SkyPilot writes images as docker:<image>
        plan.image = plan.image.substr(7);
    }
    plan.num_nodes = spec.num_nodes;
    plan.indexed = f->indexed_jobs();
    if (spec.sweep) {
        if (!plan.indexed) {
            return fail(
                ErrorKind::invalid_spec,
                fmt::format("{}: sweep: a sweep is one Indexed Job, which Kubernetes has from 1.22; this "
                            "cluster runs {}.{}",
                            m_cluster, f->major, f->minor),
                "run the sweep on Slurm (one job array) or on a cluster with Kubernetes 1.22 or later");
        }
        plan.sweep = spec.sweep;
        plan.per_index_backoff = f->backoff_limit_per_index();
    }
    if (f->ttl_after_finished()) {
        plan.ttl_seconds_after_finished = m_settings.ttl_seconds_after_finished;
    }
    if (!resources.accelerators.empty()) {
        const auto& want = resources.accelerators.front();
        plan.gpu = choose_gpu_request(want, *pool);
        if (!plan.gpu) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: node pool {} has no MIG slice or shared GPU for {}:{}", m_cluster,
                                    pool->name, want.name, want.count));
        }
    }
    if (resources.cpus) {
        plan.cpus = resources.cpus->value;
    }
    if (resources.memory_gb) {
        plan.memory_gb = resources.memory_gb->value;
        plan.memory_exact = !resources.memory_gb->at_least;
    }
    plan.limits_factor = spec.kubernetes.pod_resource_limits;
    plan.service_account = service_account_for(spec.kubernetes.remote_identity, m_api.context().name);
    if (auto pc = resources.hints.find("priority_class");
        pc != resources.hints.end() && pc->second.is_string()) {
        plan.priority_class = pc->second.get<std::string>();
    }
    auto upload = pod_upload(spec);
    if (!upload) {
        return tl::unexpected(upload.error());
    }
    plan.upload = std::move(*upload);
    if (plan.sweep && plan.upload) {
        return fail(
            ErrorKind::invalid_spec,
            fmt::format("{}: sweep: the elements' pods start as the Job's parallelism lets them, after "
                        "launch has ended, and would wait for a workdir and file_mounts no one sends",
                        m_cluster),
            "use a git workdir (workdir: {url: ...}) or an image that holds the code, or run the sweep "
            "on Slurm, where the workdir is on a shared filesystem");
    }
    if (resources.job_recovery && !resources.job_recovery->disabled) {
        const auto& recovery = *resources.job_recovery;
        if (plan.upload) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: resources.job_recovery: a replacement pod would start without the "
                                    "workdir and file_mounts (tandem sends them once, at launch, and no tandem "
                                    "process is there when the pod is replaced)",
                                    m_cluster),
                        "use a git workdir (workdir: {url: ...}) or an image that holds the code, or a "
                        "cluster where the workdir is on a shared filesystem (Slurm)");
        }
        plan.pod_failure_policy = f->pod_failure_policy();
        if (!plan.pod_failure_policy && !recovery.recover_on_exit_codes.empty()) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: resources.job_recovery.recover_on_exit_codes needs a Job "
                                    "podFailurePolicy, which Kubernetes has from 1.26; this cluster runs {}.{}",
                                    m_cluster, f->major, f->minor),
                        "drop recover_on_exit_codes (max_restarts_on_errors retries every exit code here), or "
                        "run on a cluster with Kubernetes 1.26 or later");
        }
        plan.recovery = recovery;
    }
    return plan;
}

Result<std::string> K8sBackend::render(const TaskSpec& spec, const Placement& placement,
                                       std::int64_t job_id) {
    if (spec.service) {
        return render_service(spec, placement);
    }
    auto plan = job_plan(spec, placement, job_id);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    auto manifests = render_manifests(spec, *plan, true);
    if (!manifests) {
        return tl::unexpected(manifests.error());
    }
    return to_yaml(*manifests);
}

namespace {

// The apiserver turned this Job down on its merits: validation or an admission controller (400/422), a
// ResourceQuota ("exceeded quota", 403), or a webhook. Another cluster may well take it.
bool declined(const Error& e) {
    if (e.kind == ErrorKind::invalid_spec) {
        return true;
    }
    return e.message.find("exceeded quota") != std::string::npos ||
           e.message.find("admission webhook") != std::string::npos;
}

} // namespace

// POST; a 409 AlreadyExists is fine when the object is ours (a retried create that had reached the server).
Status K8sBackend::create(const std::string& path, const json& object, const std::string& token,
                          json* created) {
    auto answer = m_api.call("POST", path, object, {409});
    if (!answer && answer.error().kind != ErrorKind::unauthorized && !declined(answer.error())) {
        // The create may have happened although its answer was lost (cut, unreadable, too slow to come):
        // the name is fixed, so look before calling it failed. A lookup that fails keeps the first error.
        const auto name = object["metadata"]["name"].get<std::string>();
        auto existing = m_api.call("GET", path + "/" + name, {}, {404});
        if (existing && existing->status / 100 == 2 &&
            fields::str_at(existing->body, "metadata", "labels", k_token_label) == token) {
            answer = existing;
        }
    }
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    if (answer->status == 409) {
        const auto name = object["metadata"]["name"].get<std::string>();
        auto existing = m_api.call("GET", path + "/" + name);
        if (!existing) {
            return tl::unexpected(existing.error());
        }
        const auto labels = existing->body["metadata"].value("labels", json::object());
        if (labels.value(std::string(k_token_label), "") != token) {
            return fail(ErrorKind::remote, fmt::format("{}: {} {} already exists and is not this submit's",
                                                       m_cluster, object.value("kind", "object"), name));
        }
        answer = existing;
    }
    if (created) {
        *created = answer->body;
    }
    return {};
}

namespace {

// A Pod as the first Job would create it, for a server-side dry run: quotas and pod admission (limit
// ranges, pod security, webhooks) judge pods, not Jobs, so a Job they refuse is accepted and then sits
// with FailedCreate events forever. The dry run turns that into a refusal at submit time.
json dry_run_pod(const json& job) {
    json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
    const json& tmpl = job["spec"]["template"];
    pod["metadata"] = tmpl.value("metadata", json::object());
    pod["metadata"]["generateName"] = job["metadata"].value("name", "tandem") + "-";
    pod["spec"] = tmpl.value("spec", json::object());
    return pod;
}

} // namespace

std::string K8sBackend::user() const {
    return m_settings.user.empty() ? m_api.context().user_name : m_settings.user;
}

Result<std::string> K8sBackend::submit(const TaskSpec& spec, const Placement& placement, std::int64_t job_id,
                                       const JobIdentity& identity) {
    const std::string& token = identity.token;
    if (spec.service) {
        return fail(ErrorKind::invalid_spec, "the task has a `service:` section: it is a service, not a job",
                    "tandem serve up FILE starts it");
    }
    auto plan = job_plan(spec, placement, job_id, token);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    JobIdentity mine = identity;
    mine.user = user();
    plan->user = label_value(mine.user);
    plan->group_token = identity.group;
    plan->identity = encode_identity(mine);
    auto manifests = render_manifests(spec, *plan, false);
    if (!manifests) {
        return tl::unexpected(manifests.error());
    }
    // The files are read (and their size checked) before anything is created.
    std::optional<upload::UploadSet> uploads;
    if (plan->upload) {
        auto set = upload::scan_uploads(spec, m_settings.workdir_limit_bytes);
        if (!set) {
            Error e = set.error();
            e.message = fmt::format("{}: {}", m_cluster, e.message);
            return tl::unexpected(before_submit(e));
        }
        uploads = std::move(*set);
        if (const auto& claim = plan->upload->cache_claim; !claim.empty()) {
            // A claim that is not there would keep every pod Pending until upload_wait_seconds: say so now.
            // Credentials that may not read claims (403) prove nothing, and the pods will tell.
            auto found = m_api.call(
                "GET", core_path(plan->namespace_name, "persistentvolumeclaims") + "/" + query_escape(claim),
                {}, {404, 403});
            if (found && found->status == 404) {
                return tl::unexpected(before_submit(
                    Error(ErrorKind::config,
                          fmt::format(
                              "{}: upload_cache_claim: there is no PersistentVolumeClaim {} in namespace {}",
                              m_cluster, claim, plan->namespace_name),
                          "create it (ReadWriteMany), or remove upload_cache_claim from the cluster in "
                          "config.yaml")));
            }
        }
    }
    const auto& ns = plan->namespace_name;
    // Only a refusal on the job's merits counts: a dry run the credentials may not make (RBAC that
    // allows Jobs but not Pods) or that fails in transit proves nothing, and the Job is created anyway.
    if (!manifests->jobs.empty()) {
        auto dry = m_api.call("POST", core_path(ns, "pods") + "?dryRun=All",
                              dry_run_pod(manifests->jobs.front()), {}, true);
        if (!dry && dry.error().kind == ErrorKind::timeout) {
            // The server did not answer within its whole budget: creating the Job would wait as long
            // again, past the cluster's deadline. Nothing was created, so the launch can say so.
            return tl::unexpected(dry.error());
        }
        if (!dry && declined(dry.error())) {
            Error e = dry.error();
            // The server's own words without the request line: "exceeded quota: gpus, requested: ...".
            constexpr std::string_view marker = "is forbidden: ";
            if (auto at = e.message.find(marker); at != std::string::npos) {
                e.message = fmt::format("{}: namespace {} refuses its pods: {}", m_cluster, ns,
                                        e.message.substr(at + marker.size()));
            }
            return tl::unexpected(refusal(e));
        }
    }
    // Jobs first, then the Service and the Secret, each created already owned by the (first) Job: deleting
    // it, by cancel or by its TTL, lets the garbage collector remove them too, and no PATCH is needed (a
    // user's Role may grant only get, list, watch, create and delete). A pod that starts before its
    // Secret exists waits for it (CreateContainerConfigError, retried by the kubelet).
    json owner;
    std::vector<std::string> created_jobs;
    auto take_back = [&]() {
        const json background = {
            {"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
        bool all = true;
        for (const auto& name : created_jobs) {
            all =
                m_api.call("DELETE", jobs_path(ns) + "/" + name, background, {404}, true).has_value() && all;
        }
        return all;
    };
    for (const auto& job : manifests->jobs) {
        json created;
        if (auto ok = create(jobs_path(ns), job, plan->submit_token, &created); !ok) {
            if (owner.is_null() && declined(ok.error())) {
                // Nothing of this job runs: let launch try the next cluster.
                return tl::unexpected(refusal(ok.error()));
            }
            return tl::unexpected(ok.error());
        }
        created_jobs.push_back(fields::str_at(created, "metadata", "name"));
        sys::fault_point("k8s.first-job"); // fault-injection tests: the rest of the job is not created yet
        if (owner.is_null()) {
            owner = {{"apiVersion", "batch/v1"},
                     {"kind", "Job"},
                     {"name", fields::str_at(created, "metadata", "name")},
                     {"uid", fields::str_at(created, "metadata", "uid")}};
        }
    }
    for (const auto& [object, collection] :
         {std::pair{&manifests->service, "services"}, std::pair{&manifests->secret, "secrets"}}) {
        if (!*object) {
            continue;
        }
        json owned = **object;
        owned["metadata"]["ownerReferences"] = json::array({owner});
        if (auto ok = create(core_path(ns, collection), owned, plan->submit_token, nullptr); !ok) {
            // The Jobs could not run as asked (their ranks' names or their secrets are missing): take
            // them back, and let launch try the next cluster when the cluster refused on the merits.
            take_back();
            return tl::unexpected(declined(ok.error()) ? refusal(ok.error()) : ok.error());
        }
    }
    if (uploads) {
        if (auto sent = send_uploads(spec, *plan, *uploads); !sent) {
            // The job never started (its pods wait in their upload container): take it back and fail it
            // with the reason. Should that fail too, the Jobs stay, their pods give up waiting after
            // upload_wait_seconds, and the launch records the job as submitted (it may be found).
            if (take_back()) {
                return tl::unexpected(before_submit(sent.error()));
            }
            return tl::unexpected(sent.error());
        }
    }
    return ns + "/" + plan->base_name;
}

// Pods first: while every rank of every job has a live pod (the common case for a busy namespace), the
// pods decide and the Job list is not read, so a refresh is one request. Anything that may be an ending
// reads the Jobs too (their conditions decide it).
Result<std::vector<JobUpdate>> K8sBackend::refresh(const std::vector<JobRecord>& jobs) {
    struct Lists {
        json jobs = json{{"items", json::array()}};
        json pods;
        bool jobs_read = false;
    };
    std::map<std::string, Lists> lists; // by namespace
    const std::string selector = "?labelSelector=" + query_escape(managed_selector());
    for (const auto& job : jobs) {
        const auto ns = split_remote_id(job.remote_id, m_settings.namespace_name).first;
        if (lists.count(ns)) {
            continue;
        }
        auto pod_list = m_api.list_for_status(core_path(ns, "pods") + selector);
        if (!pod_list) {
            return tl::unexpected(pod_list.error());
        }
        lists[ns].pods = std::move(pod_list->body);
    }
    auto views_of = [&](const std::string& ns) {
        return group_by_tandem_job(lists[ns].jobs, lists[ns].pods, nullptr);
    };
    std::map<std::string, std::map<std::string, JobView>> groups;
    for (auto& [ns, l] : lists) {
        groups[ns] = views_of(ns);
    }
    for (const auto& job : jobs) {
        const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
        Lists& l = lists[ns];
        if (l.jobs_read) {
            continue;
        }
        JobView view;
        if (auto it = groups[ns].find(base); it != groups[ns].end()) {
            view = it->second;
        }
        add_record(view, job);
        if (!pods_decide(view)) {
            auto job_list = m_api.list_for_status(jobs_path(ns) + selector);
            if (!job_list) {
                return tl::unexpected(job_list.error());
            }
            l.jobs = std::move(job_list->body);
            l.jobs_read = true;
            groups[ns] = views_of(ns);
        }
    }
    std::vector<JobUpdate> updates;
    for (const auto& job : jobs) {
        const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
        JobView view;
        if (auto it = groups[ns].find(base); it != groups[ns].end()) {
            view = it->second;
        }
        add_record(view, job);
        view.jobs_unread = !lists[ns].jobs_read;
        JobUpdate u = to_job_update(view);
        if (u.state == JobState::unknown && view.jobs.empty() && view.pods.empty() && lists[ns].jobs_read &&
            std::filesystem::exists(m_cancelled_dir + "/" + safe_file_part(job.remote_id))) {
            u = JobUpdate{JobState::cancelled, std::string(k_user_cancel_reason), std::nullopt, std::nullopt,
                          now_seconds()};
        } else if (u.state == JobState::unknown && view.jobs.empty() && view.pods.empty() &&
                   lists[ns].jobs_read && !is_terminal(job.state) && job.updated_at > 0 &&
                   (!m_settings.ttl_seconds_after_finished ||
                    now_seconds() - job.updated_at < *m_settings.ttl_seconds_after_finished)) {
            // Gone while it was last seen running, sooner than its TTL could have removed it after an
            // ending: someone deleted it (`tandem cancel` from another machine, kubectl delete). A user's
            // cancel, so a failover never takes it for its own and moves the job on.
            u = JobUpdate{JobState::cancelled, std::string(k_user_cancel_reason), std::nullopt,
                          std::nullopt, now_seconds()};
        }
        updates.push_back(std::move(u));
    }
    return updates;
}

Capabilities K8sBackend::capabilities() {
    return Capabilities{this, this, this, this, this, this};
}

} // namespace tandem::k8s
