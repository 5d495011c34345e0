// The table of SkyPilot task keys (see skypilot_keys.hpp). Rows are grouped by section, in SkyPilot's
// schema order. A `handled` row needs code in the spec loader; every other row is complete by itself.

#include "core/skypilot_keys.hpp"

#include <fmt/format.h>

namespace tandem {

namespace {

using U = KeyUse;

constexpr std::string_view k_cloud_config =
    "is addressed to a cloud tandem never runs on; it has no effect on slurm, k8s or local";
constexpr std::string_view k_spot_fallback =
    "spot/on-demand fallback has no meaning on Kubernetes: replicas run on the cluster's nodes";
constexpr std::string_view k_global =
    "is a SkyPilot global setting (~/.sky/config.yaml), not a task setting; tandem's clusters are set up "
    "in its own config.yaml";

const std::vector<SkyKey> k_keys{
    // ---- The task (get_task_schema) ----
    {"", "name", U::handled, {}},
    {"", "workdir", U::handled, {}},
    {"", "num_nodes", U::handled, {}},
    {"", "resources", U::handled, {}},
    {"", "envs", U::handled, {}},
    {"", "secrets", U::handled, {}},
    {"", "file_mounts", U::handled, {}},
    {"", "setup", U::handled, {}},
    {"", "run", U::handled, {}},
    {"", "config", U::handled, {}},
    {"", "api_server_access", U::handled, {}}, // false is fine; true needs a SkyPilot API server
    {"", "service", U::handled, {}},           // `tandem serve`; service_parser.cpp
    {"", "sweep", U::handled, {}},             // tandem's own (issue 33); sweep_parser.cpp
    {"", "sweep_parallel", U::handled, {}},    // tandem's own
    {"", "pool", U::not_yet, "SkyPilot worker pools"},
    {"", "event_callback", U::not_yet, "event callbacks"},
    {"", "volumes", U::not_yet, "SkyPilot volumes"},
    {"", "volume_mounts", U::not_yet, "SkyPilot volume mounts"},
    {"", "managed_secrets", U::not_yet, "SkyPilot managed secrets"},
    {"", "experimental", U::not_yet, "experimental overrides (use `config:`)"},
    {"", "inputs", U::ignored, "SkyPilot uses it only to estimate data egress cost"},
    {"", "outputs", U::ignored, "SkyPilot uses it only to estimate data egress cost"},
    {"", "file_mounts_mapping", U::internal, {}},
    {"", "_metadata", U::internal, {}},

    // ---- resources (get_resources_schema); also each any_of/ordered entry ----
    {"resources", "infra", U::handled, {}},
    {"resources", "cloud", U::handled, {}},
    {"resources", "region", U::handled, {}},
    {"resources", "zone", U::handled, {}},
    {"resources", "cpus", U::handled, {}},
    {"resources", "memory", U::handled, {}},
    {"resources", "accelerators", U::handled, {}},
    {"resources", "gpus", U::handled, {}}, // newer SkyPilot's alias of accelerators
    {"resources", "instance_type", U::handled, {}},
    {"resources", "use_spot", U::handled, {}},
    {"resources", "job_recovery", U::handled, {}},
    {"resources", "spot_recovery", U::handled, {}}, // older name of job_recovery
    {"resources", "disk_size", U::handled, {}},
    {"resources", "ephemeral_storage", U::handled, {}}, // deprecated alias of disk_size
    {"resources", "disk_tier", U::handled, {}},
    {"resources", "network_tier", U::handled, {}},
    {"resources", "local_disk", U::handled, {}},
    {"resources", "max_hourly_cost", U::handled, {}},
    {"resources", "ports", U::handled, {}},
    {"resources", "labels", U::handled, {}},
    {"resources", "image_id", U::handled, {}},
    {"resources", "autostop", U::handled, {}},
    {"resources", "priority", U::handled, {}},
    {"resources", "priority_class", U::handled, {}},
    {"resources", "any_of", U::handled, {}},
    {"resources", "ordered", U::handled, {}},
    {"resources", "accelerator_args", U::cloud_only, "TPU settings (GCP)"},
    {"resources", "volumes", U::not_yet, "disk volumes attached to the cluster"},
    {"resources", "_no_missing_accel_warnings", U::internal, {}},
    {"resources", "_docker_login_config", U::internal, {}},
    {"resources", "_is_image_managed", U::internal, {}},
    {"resources", "_requires_fuse", U::internal, {}},
    {"resources", "_cluster_config_overrides", U::internal, {}},

    // ---- service (get_service_schema, sky/serve/service_spec.py) ----
    {"service", "readiness_probe", U::handled, {}},
    {"service", "pool", U::handled, {}}, // false is fine; true (a worker pool) not yet
    {"service", "replica_policy", U::handled, {}},
    {"service", "ports", U::handled, {}},
    {"service", "replicas", U::handled, {}},
    {"service", "workers", U::not_yet, "SkyPilot worker pools"},
    {"service", "load_balancing_policy", U::handled, {}},
    {"service", "tls", U::handled, {}},

    // ---- service.readiness_probe (its mapping form) ----
    {"service.readiness_probe", "path", U::handled, {}},
    {"service.readiness_probe", "initial_delay_seconds", U::handled, {}},
    {"service.readiness_probe", "timeout_seconds", U::handled, {}},
    {"service.readiness_probe", "post_data", U::handled, {}},
    {"service.readiness_probe", "headers", U::handled, {}},

    // ---- service.replica_policy ----
    {"service.replica_policy", "min_replicas", U::handled, {}},
    {"service.replica_policy", "max_replicas", U::handled, {}},
    {"service.replica_policy",
     "target_qps_per_replica",
     U::handled,
     {}}, // one number; per accelerator: not yet
    {"service.replica_policy", "upscale_delay_seconds", U::handled, {}},
    {"service.replica_policy", "downscale_delay_seconds", U::handled, {}},
    {"service.replica_policy", "num_overprovision", U::not_yet, "overprovisioned replicas"},
    {"service.replica_policy", "dynamic_ondemand_fallback", U::cloud_only, k_spot_fallback},
    {"service.replica_policy", "base_ondemand_fallback_replicas", U::cloud_only, k_spot_fallback},
    {"service.replica_policy", "spot_placer", U::cloud_only, k_spot_fallback},
    {"service.replica_policy", "cost_rebalance", U::cloud_only, k_spot_fallback},

    // ---- service.tls ----
    {"service.tls", "keyfile", U::handled, {}},
    {"service.tls", "certfile", U::handled, {}},

    // ---- config: what a task may override (OVERRIDEABLE_CONFIG_KEYS_IN_TASK), tandem's own keys, and
    // the rest of SkyPilot's global config, refused precisely ----
    {"config", "kubernetes", U::handled, {}},
    {"config", "slurm", U::handled, {}},
    {"config", "pending_timeout", U::handled, {}}, // tandem's own
    {"config", "hooks", U::not_yet, "lifecycle hooks (run on stop, preemption or down)"},
    {"config", "docker", U::ignored,
     "tandem starts no docker container itself (on k8s the pod runs image_id)"},
    {"config", "nvidia_gpus", U::ignored, "GPU driver settings apply to VMs SkyPilot provisions"},
    {"config", "active_workspace", U::ignored, "SkyPilot API server workspaces do not exist in tandem"},
    {"config", "ssh", U::ignored,
     "SkyPilot's SSH node pools; tandem reaches Slurm over ssh from config.yaml"},
    {"config", "aws", U::ignored, k_cloud_config},
    {"config", "gcp", U::ignored, k_cloud_config},
    {"config", "azure", U::ignored, k_cloud_config},
    {"config", "oci", U::ignored, k_cloud_config},
    {"config", "vast", U::ignored, k_cloud_config},
    {"config", "nebius", U::ignored, k_cloud_config},
    {"config", "jobs", U::global_only, k_global},
    {"config", "serve", U::global_only, k_global},
    {"config", "allowed_clouds", U::global_only, k_global},
    {"config", "admin_policy", U::global_only, k_global},
    {"config", "api_server", U::global_only, k_global},
    {"config", "workspace", U::global_only, k_global},
    {"config", "workspaces", U::global_only, k_global},
    {"config", "workspace_config", U::global_only, k_global},
    {"config", "db", U::global_only, k_global},
    {"config", "provision", U::global_only, k_global},
    {"config", "rbac", U::global_only, k_global},
    {"config", "logs", U::global_only, k_global},
    {"config", "daemons", U::global_only, k_global},
    {"config", "data", U::global_only, k_global},
    {"config", "dashboard", U::global_only, k_global},
    {"config", "metrics", U::global_only, k_global},
    {"config", "plugins", U::global_only, k_global},

    // ---- config.kubernetes ----
    {"config.kubernetes", "namespace", U::handled, {}},
    {"config.kubernetes", "pod_config", U::handled, {}},
    {"config.kubernetes", "queue", U::handled, {}},         // tandem's own: Kueue's queue-name label
    {"config.kubernetes", "backoff_limit", U::handled, {}}, // tandem's own: the Job's pod retries
    {"config.kubernetes", "provision_timeout", U::handled, {}},
    {"config.kubernetes", "remote_identity", U::handled, {}},
    {"config.kubernetes", "custom_metadata", U::handled, {}},
    {"config.kubernetes", "kueue", U::handled, {}},
    {"config.kubernetes", "quota", U::handled, {}},
    {"config.kubernetes", "set_pod_resource_limits", U::handled, {}},
    {"config.kubernetes", "enable_docker", U::handled, {}}, // false is fine; otherwise not yet
    {"config.kubernetes", "dws", U::handled, {}},           // enabled: false is fine; otherwise not yet
    {"config.kubernetes", "allowed_contexts", U::global_only, k_global},
    {"config.kubernetes", "context_configs", U::global_only, k_global},
    {"config.kubernetes", "networking", U::global_only, k_global},
    {"config.kubernetes", "ports", U::global_only, k_global},
    {"config.kubernetes", "autoscaler", U::global_only, k_global},
    {"config.kubernetes", "high_availability", U::global_only, k_global},
    {"config.kubernetes", "allowed_nodes", U::global_only, k_global},
    {"config.kubernetes", "rdma", U::global_only, k_global},
    {"config.kubernetes", "max_inline_command_length", U::global_only, k_global},
    {"config.kubernetes", "post_provision_runcmd", U::global_only, k_global},
    {"config.kubernetes", "apt_mirrors", U::global_only, k_global},
    {"config.kubernetes", "pricing", U::global_only, k_global},
    {"config.kubernetes", "auto_mounts", U::global_only, k_global},

    // ---- config.slurm ----
    {"config.slurm", "partition", U::handled, {}},  // tandem's own
    {"config.slurm", "account", U::handled, {}},    // tandem's own
    {"config.slurm", "qos", U::handled, {}},        // tandem's own
    {"config.slurm", "constraint", U::handled, {}}, // tandem's own
    {"config.slurm", "time", U::handled, {}},       // tandem's own
    {"config.slurm", "sbatch_options", U::handled, {}},
    {"config.slurm", "quota", U::handled, {}},
    {"config.slurm", "cpu_partition", U::handled, {}},
    {"config.slurm", "provision_timeout", U::handled, {}},
    {"config.slurm", "allowed_clusters", U::global_only, k_global},
    {"config.slurm", "submit_as_user", U::global_only, k_global},
    {"config.slurm", "username_map", U::global_only, k_global},
    {"config.slurm", "pricing", U::global_only, k_global},
    {"config.slurm", "gpu_partition_map", U::global_only, k_global},
    {"config.slurm", "container_mounts", U::global_only, k_global},
    {"config.slurm", "prometheus", U::global_only, k_global},
    {"config.slurm", "cluster_configs", U::global_only, k_global},
    {"config.slurm", "remote_identity", U::global_only, k_global},
};

} // namespace

const std::vector<SkyKey>& sky_keys() {
    return k_keys;
}

const SkyKey* find_sky_key(std::string_view section, std::string_view key) {
    for (const auto& row : k_keys) {
        if (row.section == section && row.key == key) {
            return &row;
        }
    }
    return nullptr;
}

std::vector<std::string_view> sky_keys_of(std::string_view section) {
    std::vector<std::string_view> out;
    for (const auto& row : k_keys) {
        if (row.section == section && row.use != KeyUse::internal) {
            out.push_back(row.key);
        }
    }
    return out;
}

std::string refusal_message(const SkyKey& key) {
    switch (key.use) {
    case KeyUse::cloud_only:
        return fmt::format("is a cloud-only field ({}); not supported on slurm, k8s or local", key.note);
    case KeyUse::not_yet:
        return fmt::format("is a SkyPilot feature tandem does not support yet ({})", key.note);
    case KeyUse::global_only:
        return std::string(key.note);
    case KeyUse::handled:
    case KeyUse::ignored:
    case KeyUse::internal:
        break;
    }
    return {};
}

} // namespace tandem
