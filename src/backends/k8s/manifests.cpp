// Rendering of a tandem job as Kubernetes objects (the model is described in manifests.hpp).

#include "backends/k8s/manifests.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "backends/k8s/labels.hpp"
#include "backends/k8s/node_inventory.hpp"
#include "backends/upload/mount_script.hpp"
#include "core/git_checkout.hpp"
#include "core/job_group.hpp"
#include "core/job_recovery.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

// Runs in every pod as `bash -c "$program" tandem-node SETUP RUN`. Fixed text: no user input.
constexpr std::string_view k_node_program = R"(rc=0
if [ -n "$1" ]; then /bin/bash -c "$1" tandem-setup; rc=$?; fi
if [ "$rc" -eq 0 ] && [ -n "$2" ]; then /bin/bash -c "$2" tandem-run; rc=$?; fi
exit "$rc")";

// With a git workdir, each pod clones it into a directory of its own (the pod's /tmp; on the testbed's
// node agent, where pods share one host, the rank keeps them apart) and runs there.
constexpr std::string_view k_node_git =
    R"(tandem_git_checkout "$TANDEM_GIT_DIR/rank-$TANDEM_NODE_RANK" || exit $?
cd "$TANDEM_GIT_DIR/rank-$TANDEM_NODE_RANK" || exit 1
)";

// A job group member waits for the group's addresses first: tandem creates the ConfigMap named by the
// member's channel once every member has its pods or nodes, and the kubelet projects it into the
// (optional) volume mounted here.
constexpr std::string_view k_node_group_wait = R"(tandem_group_wait "$TANDEM_GROUP_BOOK" || exit $?
)";

// With uploads, the file_mounts follow setup and run as arguments, three words each (kind, staged
// path, destination): no user text is ever part of the program.
constexpr std::string_view k_node_mounts = R"sh(tandem_setup=$1 tandem_run=$2
shift 2
while [ "$#" -ge 3 ]; do tandem_mount "$2" "$3" "$1" || exit 1; shift 3; done
set -- "$tandem_setup" "$tandem_run"
)sh";

// The upload container: waits for the files tandem sends over exec, giving up after $1 seconds (the
// launch that was to send them ended first), so an abandoned pod fails instead of waiting forever.
constexpr std::string_view k_upload_wait = R"sh(end=$(( $(date +%s) + $1 ))
while [ ! -e /tandem/.tandem-complete ]; do
  if [ "$(date +%s)" -ge "$end" ]; then
    echo "tandem: the workdir and file_mounts did not arrive within $1 s (the launch that was to send them ended)" >&2
    exit 1
  fi
  sleep 0.2 2>/dev/null || sleep 1
done)sh";

std::string node_program(const TaskSpec& spec, const JobPlan& plan) {
    std::string program;
    if (!spec.group_channel.empty()) {
        program += group_wait_function() + std::string(k_node_group_wait);
    }
    if (spec.git_workdir) {
        program += git_checkout_function() + std::string(k_node_git);
    }
    if (plan.upload) {
        if (!plan.upload->mounts.empty()) {
            program += std::string(upload::mount_copy_function()) + std::string(k_node_mounts);
        }
        if (plan.upload->workdir) {
            program += fmt::format("cd {}/workdir || exit 1\n", k_upload_root);
        }
    }
    if (plan.sweep) { // render_manifests has checked that every element can be written
        program += sweep_shell_block(*plan.sweep, "${TANDEM_SWEEP_INDEX:-0}").value_or("");
    }
    return program + std::string(k_node_program);
}

std::string group_mount_path(const TaskSpec& spec) {
    return "/var/run/tandem/" + spec.group_channel;
}

constexpr std::string_view k_container = "main";

// Names tandem sets itself; a task env of the same name is not repeated (like the Slurm script).
constexpr std::array<std::string_view, 11> k_own_names{
    "TANDEM_JOB_ID",      "TANDEM_JOB_NAME",   "TANDEM_NUM_GPUS_PER_NODE", "TANDEM_NUM_NODES",
    "TANDEM_NODE_IPS",    "TANDEM_NODE_RANK",  "SKYPILOT_TASK_ID",         "SKYPILOT_NUM_GPUS_PER_NODE",
    "SKYPILOT_NUM_NODES", "SKYPILOT_NODE_IPS", "SKYPILOT_NODE_RANK",
};

tl::unexpected<Error> refuse(std::string message) {
    return fail(ErrorKind::invalid_spec, "k8s: " + std::move(message));
}

// Kubernetes expands $(NAME) in env values, command and args, and turns $$ into $.
std::string escape_expansion(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        out += c;
        if (c == '$') {
            out += '$';
        }
    }
    return out;
}

bool is_secret_key(std::string_view key) {
    return !key.empty() && key.size() <= 253 && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

std::string cpu_quantity(double cpus) {
    const double milli = std::ceil(cpus * 1000.0);
    if (std::fmod(milli, 1000.0) == 0) {
        return fmt::format("{}", static_cast<long long>(milli / 1000.0));
    }
    return fmt::format("{}m", static_cast<long long>(milli));
}

std::string memory_quantity(double gib) {
    if (std::fmod(gib, 1.0) == 0) {
        return fmt::format("{}Gi", static_cast<long long>(gib));
    }
    return fmt::format("{}Mi", static_cast<long long>(std::ceil(gib * 1024.0)));
}

json labels_of(const TaskSpec& spec, const JobPlan& plan, std::optional<int> rank) {
    json labels = json::object();
    for (const auto& [k, v] : spec.resources.labels) {
        labels[k] = v;
    }
    labels[std::string(k_managed_by_key)] = std::string(k_managed_by_value);
    labels[std::string(k_job_label)] = plan.base_name;
    labels[std::string(k_id_label)] = std::to_string(plan.tandem_id);
    labels[std::string(k_token_label)] = plan.submit_token;
    if (!plan.user.empty()) {
        labels[std::string(k_user_label)] = plan.user;
    }
    if (!plan.group_token.empty()) {
        labels[std::string(k_group_label)] = plan.group_token;
    }
    if (rank) {
        labels[std::string(k_rank_label)] = std::to_string(*rank);
    }
    return labels;
}

// SkyPilot's custom_metadata: labels and annotations on every object; tandem's own labels win.
void add_custom_metadata(json& metadata, const TaskSpec& spec) {
    const json& custom = spec.kubernetes.custom_metadata;
    if (!custom.is_object()) {
        return;
    }
    for (const char* kind : {"labels", "annotations"}) {
        auto it = custom.find(kind);
        if (it == custom.end() || !it->is_object()) {
            continue;
        }
        json& target = metadata[kind];
        for (const auto& [k, v] : it->items()) {
            if (!target.contains(k)) {
                target[k] = v;
            }
        }
    }
}

json env_value(const std::string& name, const std::string& value) {
    return json{{"name", name}, {"value", escape_expansion(value)}};
}

json env_field(const std::string& name, const std::string& field_path) {
    return json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

std::string node_hosts(const JobPlan& plan) {
    std::string hosts;
    for (int r = 0; r < plan.num_nodes; ++r) {
        hosts += fmt::format("{}{}-{}.{}", r ? "\n" : "", plan.base_name, r, plan.base_name);
    }
    return hosts;
}

std::string gpu_count_text(const JobPlan& plan) {
    return std::to_string(plan.gpu ? plan.gpu->count : 0);
}

// TANDEM_*/SKYPILOT_* first, then the task's envs, then its secrets (by reference).
json environment(const TaskSpec& spec, const JobPlan& plan, std::optional<int> rank) {
    json env = json::array();
    auto both = [&](const char* suffix, const std::string& value) {
        env.push_back(env_value(fmt::format("TANDEM_{}", suffix), value));
        env.push_back(env_value(fmt::format("SKYPILOT_{}", suffix), value));
    };
    env.push_back(env_value("TANDEM_JOB_ID", std::to_string(plan.tandem_id)));
    env.push_back(env_value("TANDEM_JOB_NAME", spec.name));
    env.push_back(env_value("SKYPILOT_TASK_ID", fmt::format("tandem-{}-{}", plan.tandem_id, spec.name)));
    both("NUM_NODES", std::to_string(plan.num_nodes));
    both("NUM_GPUS_PER_NODE", gpu_count_text(plan));
    if (rank) {
        both("NODE_RANK", std::to_string(*rank));
    } else if (plan.num_nodes > 1) { // Indexed: the Job controller writes the index into an annotation
        const auto path = fmt::format("metadata.annotations['{}']", k_completion_index_annotation);
        env.push_back(env_field("TANDEM_NODE_RANK", path));
        env.push_back(env_field("SKYPILOT_NODE_RANK", path));
    } else {
        both("NODE_RANK", "0");
    }
    if (plan.sweep) { // the element: the pod's completion index (the program exports its values)
        env.push_back(env_field("TANDEM_SWEEP_INDEX",
                                fmt::format("metadata.annotations['{}']", k_completion_index_annotation)));
    }
    if (plan.num_nodes > 1) {
        both("NODE_IPS", node_hosts(plan));
    } else {
        env.push_back(env_field("TANDEM_NODE_IPS", "status.podIP"));
        env.push_back(env_field("SKYPILOT_NODE_IPS", "status.podIP"));
    }
    if (!spec.group_channel.empty()) {
        env.push_back(
            env_value("TANDEM_GROUP_BOOK", group_mount_path(spec) + "/" + std::string(k_group_book_key)));
        // What the group's book lists for this pod: a replacement pod waits for a book naming it.
        env.push_back(env_field("TANDEM_POD_IP", "status.podIP"));
    }
    if (spec.git_workdir) {
        for (const auto& [name, value] : git_checkout_environment(*spec.git_workdir)) {
            env.push_back(env_value(name, value));
        }
        env.push_back(env_value("TANDEM_GIT_DIR", fmt::format("/tmp/tandem-workdir-{}", plan.base_name)));
    }
    for (const auto& [name, value] : spec.envs) {
        if (std::find(k_own_names.begin(), k_own_names.end(), name) == k_own_names.end()) {
            env.push_back(env_value(name, value));
        }
    }
    for (const auto& [name, value] : spec.secrets) {
        env.push_back(
            {{"name", name},
             {"valueFrom", {{"secretKeyRef", {{"name", plan.base_name + "-secrets"}, {"key", name}}}}}});
    }
    return env;
}

json container_resources(const JobPlan& plan) {
    json requests = json::object();
    json limits = json::object();
    if (plan.cpus) {
        requests["cpu"] = cpu_quantity(*plan.cpus);
    }
    if (plan.memory_gb) {
        requests["memory"] = memory_quantity(*plan.memory_gb);
        if (plan.memory_exact) { // exactly N: also the ceiling, so overuse is an OOMKilled, not a surprise
            limits["memory"] = requests["memory"];
        }
    }
    if (plan.limits_factor) { // SkyPilot's set_pod_resource_limits
        if (plan.cpus) {
            limits["cpu"] = cpu_quantity(*plan.cpus * *plan.limits_factor);
        }
        if (plan.memory_gb) {
            limits["memory"] = memory_quantity(*plan.memory_gb * *plan.limits_factor);
        }
    }
    if (plan.gpu) { // extended resources: the limit is the request
        limits[plan.gpu->resource] = std::to_string(plan.gpu->count);
    }
    json out = json::object();
    if (!requests.empty()) {
        out["requests"] = requests;
    }
    if (!limits.empty()) {
        out["limits"] = limits;
    }
    return out;
}

json container_ports(const TaskSpec& spec) {
    json ports = json::array();
    for (const auto& p : spec.resources.ports) {
        const auto dash = p.find('-');
        const int first = std::atoi(p.substr(0, dash).c_str());
        const int last = dash == std::string::npos ? first : std::atoi(p.substr(dash + 1).c_str());
        for (int port = first; port > 0 && port <= last && ports.size() < 100; ++port) {
            ports.push_back({{"containerPort", port}, {"protocol", "TCP"}});
        }
    }
    return ports;
}

json pod_template(const TaskSpec& spec, const JobPlan& plan, std::optional<int> rank) {
    json args = {escape_expansion(spec.setup), escape_expansion(spec.run)};
    if (plan.upload) {
        for (const auto& m : plan.upload->mounts) {
            args.push_back(m.file_name.empty() ? "dir" : "file");
            args.push_back(escape_expansion(m.staged));
            args.push_back(escape_expansion(m.destination));
        }
    }
    json container = {
        {"name", k_container},
        {"image", plan.image},
        {"command", {"/bin/bash", "-c", escape_expansion(node_program(spec, plan)), "tandem-node"}},
        {"args", args},
        {"env", environment(spec, plan, rank)},
    };
    if (auto res = container_resources(plan); !res.empty()) {
        container["resources"] = res;
    }
    if (auto ports = container_ports(spec); !ports.empty()) {
        container["ports"] = ports;
    }
    json mounts = json::array();
    json volumes = json::array();
    if (!spec.group_channel.empty()) { // optional: the pod starts before the ConfigMap exists
        mounts.push_back(
            {{"name", "tandem-group"}, {"mountPath", group_mount_path(spec)}, {"readOnly", true}});
        volumes.push_back(
            {{"name", "tandem-group"}, {"configMap", {{"name", spec.group_channel}, {"optional", true}}}});
    }
    const json files_mount = {{"name", "tandem-files"}, {"mountPath", std::string(k_upload_root)}};
    json upload_mounts = json::array({files_mount});
    if (plan.upload) {
        mounts.push_back(files_mount);
        volumes.push_back({{"name", "tandem-files"}, {"emptyDir", json::object()}});
        if (!plan.upload->cache_claim.empty()) {
            volumes.push_back({{"name", "tandem-cache"},
                               {"persistentVolumeClaim", {{"claimName", plan.upload->cache_claim}}}});
            upload_mounts.push_back({{"name", "tandem-cache"}, {"mountPath", std::string(k_upload_cache)}});
        }
    }
    if (!mounts.empty()) {
        container["volumeMounts"] = mounts;
    }
    json pod_spec = {
        {"restartPolicy", "Never"},
        {"enableServiceLinks", false},
        {"containers", json::array({container})},
    };
    if (!volumes.empty()) {
        pod_spec["volumes"] = volumes;
    }
    if (plan.upload) {
        pod_spec["initContainers"] = json::array({{
            {"name", std::string(k_upload_container)},
            {"image", plan.image},
            {"command", {"/bin/sh", "-c", escape_expansion(k_upload_wait), "tandem-upload"}},
            {"args", {std::to_string(plan.upload->wait_seconds)}},
            {"volumeMounts", upload_mounts},
        }});
    }
    if (plan.gpu) {
        if (!plan.gpu->product.empty()) { // terms are ORed: the product under any label that names one
            json terms = json::array();
            for (auto key : k_gpu_product_labels) {
                terms.push_back(
                    {{"matchExpressions",
                      json::array({{{"key", key}, {"operator", "In"}, {"values", {plan.gpu->product}}}})}});
            }
            pod_spec["affinity"] = {
                {"nodeAffinity",
                 {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
        }
        pod_spec["tolerations"] =
            json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
    }
    if (!plan.service_account.empty()) {
        pod_spec["serviceAccountName"] = plan.service_account;
    }
    if (!plan.priority_class.empty()) {
        pod_spec["priorityClassName"] = plan.priority_class;
    }
    if (plan.num_nodes > 1) {
        pod_spec["subdomain"] = plan.base_name;
        if (rank) { // Indexed Jobs name their pods' hosts <job>-<index> themselves
            pod_spec["hostname"] = fmt::format("{}-{}", plan.base_name, *rank);
        }
    }
    json metadata = {{"labels", labels_of(spec, plan, rank)}};
    add_custom_metadata(metadata, spec);
    return {{"metadata", metadata}, {"spec", pod_spec}};
}

// pod_config (a partial Pod) over tandem's template: mappings merge, the first container merges into
// tandem's, other lists are appended, scalars from pod_config win.
void merge_into(json& base, const json& over) {
    for (const auto& [key, value] : over.items()) {
        auto it = base.find(key);
        if (it == base.end()) {
            base[key] = value;
        } else if (it->is_object() && value.is_object()) {
            merge_into(*it, value);
        } else if (key == "containers" && it->is_array() && value.is_array()) {
            for (std::size_t i = 0; i < value.size(); ++i) {
                if (i < it->size() && value[i].is_object()) {
                    merge_into((*it)[i], value[i]);
                } else {
                    it->push_back(value[i]);
                }
            }
        } else if (it->is_array() && value.is_array()) {
            for (const auto& v : value) {
                it->push_back(v);
            }
        } else {
            *it = value;
        }
    }
}

Status check_pod_config(const json& pod_config) {
    if (pod_config.is_null()) {
        return {};
    }
    for (const auto& [key, value] : pod_config.items()) {
        if (key != "metadata" && key != "spec" && key != "apiVersion" && key != "kind") {
            return refuse(fmt::format("config.kubernetes.pod_config.{}: a Pod has no such field (expected "
                                      "metadata or spec)",
                                      key));
        }
        if ((key == "metadata" || key == "spec") && !value.is_object()) {
            return refuse(fmt::format("config.kubernetes.pod_config.{}: must be a mapping", key));
        }
    }
    if (auto spec = pod_config.find("spec"); spec != pod_config.end()) {
        if (auto c = spec->find("containers"); c != spec->end() && !c->is_array()) {
            return refuse("config.kubernetes.pod_config.spec.containers: must be a list");
        }
    }
    return {};
}

json merged_pod_template(const TaskSpec& spec, const JobPlan& plan, std::optional<int> rank) {
    json tmpl = pod_template(spec, plan, rank);
    if (!spec.kubernetes.pod_config.is_null()) {
        json over = spec.kubernetes.pod_config;
        over.erase("apiVersion");
        over.erase("kind");
        merge_into(tmpl, over);
    }
    return tmpl;
}

// Rules in order, the first that matches decides: a pod the cluster disrupted (the DisruptionTarget
// condition: evicted through the Eviction API, preempted, its node lost or drained) and an exit code of
// recover_on_exit_codes are replaced without counting against backoffLimit. podFailurePolicy wants the
// In values sorted, without duplicates or 0, at most 255 of them: recover_on_exit_codes is parsed so.
json pod_failure_policy(const JobRecovery& recovery) {
    json rules = json::array({{{"action", "Ignore"},
                               {"onPodConditions", json::array({{{"type", "DisruptionTarget"}}})}}});
    if (!recovery.recover_on_exit_codes.empty()) {
        rules.push_back({{"action", "Ignore"},
                         {"onExitCodes",
                          {{"containerName", std::string(k_container)},
                           {"operator", "In"},
                           {"values", recovery.recover_on_exit_codes}}}});
    }
    return {{"rules", rules}};
}

json job_manifest(const TaskSpec& spec, const JobPlan& plan, std::optional<int> rank) {
    json tmpl = merged_pod_template(spec, plan, rank);
    const int backoff = plan.recovery ? plan.recovery->max_restarts_on_errors : plan.backoff_limit;
    json job_spec = {{"template", tmpl}};
    if (plan.sweep && plan.per_index_backoff) { // each element fails on its own; the others run on
        job_spec["backoffLimitPerIndex"] = spec.kubernetes.backoff_limit.value_or(backoff);
    } else {
        job_spec["backoffLimit"] = spec.kubernetes.backoff_limit.value_or(backoff);
    }
    if (plan.recovery && plan.pod_failure_policy) {
        job_spec["podFailurePolicy"] = pod_failure_policy(*plan.recovery);
    }
    if (plan.sweep) {
        const int size = static_cast<int>(plan.sweep->size());
        job_spec["completionMode"] = "Indexed";
        job_spec["completions"] = size;
        job_spec["parallelism"] = plan.sweep->parallel > 0 ? std::min(plan.sweep->parallel, size) : size;
    } else if (plan.indexed && plan.num_nodes > 1) {
        job_spec["completionMode"] = "Indexed";
        job_spec["completions"] = plan.num_nodes;
        job_spec["parallelism"] = plan.num_nodes;
    }
    if (plan.ttl_seconds_after_finished) {
        job_spec["ttlSecondsAfterFinished"] = *plan.ttl_seconds_after_finished;
    }
    json metadata = {{"name", job_name(plan, rank.value_or(0))},
                     {"namespace", plan.namespace_name},
                     {"labels", labels_of(spec, plan, rank)}};
    if (!plan.identity.empty()) {
        metadata["annotations"][std::string(k_identity_annotation)] = plan.identity;
    }
    if (plan.recovery && !plan.recovery->recover_on_exit_codes.empty()) {
        metadata["annotations"][std::string(k_recover_codes_annotation)] =
            format_exit_codes(plan.recovery->recover_on_exit_codes);
    }
    if (plan.sweep) {
        metadata["annotations"][std::string(k_sweep_annotation)] = std::to_string(plan.sweep->size());
    }
    if (spec.kubernetes.queue) { // Kueue admits the Job into this LocalQueue
        metadata["labels"]["kueue.x-k8s.io/queue-name"] = *spec.kubernetes.queue;
    }
    add_custom_metadata(metadata, spec);
    return {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", metadata}, {"spec", job_spec}};
}

} // namespace

Result<Manifests> render_manifests(const TaskSpec& spec, const JobPlan& plan, bool mask_secrets) {
    if (auto ok = check_pod_config(spec.kubernetes.pod_config); !ok) {
        return tl::unexpected(ok.error());
    }
    for (const auto& [name, value] : spec.envs) {
        if (name.find('=') != std::string::npos || name.find('\0') != std::string::npos ||
            value.find('\0') != std::string::npos) {
            return refuse(fmt::format("envs.{}: a name with '=' or a NUL byte cannot be passed", name));
        }
    }
    if (plan.sweep) {
        if (plan.num_nodes > 1) {
            return refuse(
                "sweep: an Indexed Job's index is either a node rank or a sweep element; a sweep of "
                "multi-node elements runs on Slurm (one allocation per element)");
        }
        auto block = sweep_shell_block(*plan.sweep, "${TANDEM_SWEEP_INDEX:-0}");
        if (!block) {
            return refuse("sweep: " + block.error());
        }
        if (block->size() > k_max_sweep_program_bytes) {
            return refuse(fmt::format("sweep: the elements' values take {} KiB, more than one Kubernetes Job "
                                      "carries ({} KiB): split the sweep",
                                      block->size() / 1024, k_max_sweep_program_bytes / 1024));
        }
    }
    Manifests m;
    if (!spec.secrets.empty()) {
        auto secret = secret_manifest(spec, plan, mask_secrets);
        if (!secret) {
            return tl::unexpected(secret.error());
        }
        m.secret = std::move(*secret);
    }
    if (plan.num_nodes > 1 && !plan.indexed) {
        for (int r = 0; r < plan.num_nodes; ++r) {
            m.jobs.push_back(job_manifest(spec, plan, r));
        }
    } else {
        m.jobs.push_back(job_manifest(spec, plan, std::nullopt));
    }
    if (plan.num_nodes > 1) {
        m.service = json{{"apiVersion", "v1"},
                         {"kind", "Service"},
                         {"metadata",
                          {{"name", plan.base_name},
                           {"namespace", plan.namespace_name},
                           {"labels", labels_of(spec, plan, std::nullopt)}}},
                         {"spec",
                          {{"clusterIP", "None"},
                           {"publishNotReadyAddresses", true},
                           {"selector", {{std::string(k_job_label), plan.base_name}}}}}};
    }
    return m;
}

std::string escape_kubelet_expansion(std::string_view text) {
    return escape_expansion(text);
}

Result<json> task_pod_template(const TaskSpec& spec, const JobPlan& plan) {
    if (auto ok = check_pod_config(spec.kubernetes.pod_config); !ok) {
        return tl::unexpected(ok.error());
    }
    return merged_pod_template(spec, plan, std::nullopt);
}

Result<json> secret_manifest(const TaskSpec& spec, const JobPlan& plan, bool mask_secrets) {
    json data = json::object();
    for (const auto& [name, value] : spec.secrets) {
        if (!is_secret_key(name)) {
            return refuse(
                fmt::format("secrets.{}: not a valid Secret key (letters, digits, '-', '_', '.')", name));
        }
        data[name] = mask_secrets ? std::string("<redacted>") : value;
    }
    return json{{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata",
                 {{"name", plan.base_name + "-secrets"},
                  {"namespace", plan.namespace_name},
                  {"labels", labels_of(spec, plan, std::nullopt)}}},
                {"type", "Opaque"},
                {"stringData", data}};
}

} // namespace tandem::k8s
