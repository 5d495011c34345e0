#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/backend_support.hpp"

using namespace tandem;

namespace {

constexpr BackendKind k_all_kinds[] = {BackendKind::local, BackendKind::slurm, BackendKind::kubernetes};

std::vector<std::string> fields_of(const std::vector<Unsupported>& found) {
    std::vector<std::string> out;
    for (const auto& u : found) {
        out.push_back(u.field);
    }
    return out;
}

// The reason for `field` on `kind`, or empty when the field is supported there.
std::string reason_for(const TaskSpec& spec, const Resources& resources, BackendKind kind,
                       const std::string& field) {
    for (const auto& u : unsupported_fields(spec, resources, kind)) {
        if (u.field == field) {
            return u.reason;
        }
    }
    return {};
}

} // namespace

TEST_CASE("backend support: a plain task is supported on every backend kind") {
    TaskSpec spec;
    spec.resources.accelerators = {{"H100", 8}};
    spec.resources.cpus = Quantity{8, true};
    spec.resources.memory_gb = Quantity{64, false};
    spec.resources.use_spot = false; // written, but false: nothing to refuse
    for (auto kind : k_all_kinds) {
        CHECK(unsupported_fields(spec, spec.resources, kind).empty());
    }
}

// The ignored-field note for `field` on `kind`, or empty.
std::string note_for(const TaskSpec& spec, BackendKind kind, const std::string& field) {
    for (const auto& u : ignored_fields(spec, spec.resources, kind)) {
        if (u.field == field) {
            return u.reason;
        }
    }
    return {};
}

TEST_CASE("backend support: use_spot is refused everywhere with SkyPilot's reason") {
    TaskSpec spec;
    spec.resources.use_spot = true;
    CHECK(reason_for(spec, spec.resources, BackendKind::local, "resources.use_spot") ==
          "not supported on local: local has no spot capacity");
    CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "resources.use_spot") ==
          "not supported on slurm: Spot instances are not supported in Slurm.");
    CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "resources.use_spot") ==
          "not supported on k8s: Spot instances are not supported in Kubernetes.");
}

TEST_CASE("backend support: cloud hints follow SkyPilot's per-backend feature tables") {
    TaskSpec spec;
    SECTION("disk_tier: best needs nothing anywhere; another tier is refused on slurm and k8s") {
        spec.resources.hints["disk_tier"] = "Best";
        for (auto kind : k_all_kinds) {
            CHECK(unsupported_fields(spec, spec.resources, kind).empty());
            CHECK(note_for(spec, kind, "resources.disk_tier").find("best needs nothing") != std::string::npos);
        }
        spec.resources.hints["disk_tier"] = "high";
        CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "resources.disk_tier") ==
              "not supported on k8s: Custom disk tiers are not supported in Kubernetes.");
        CHECK_THAT(reason_for(spec, spec.resources, BackendKind::slurm, "resources.disk_tier"),
                   Catch::Contains("only disk_tier: best"));
    }
    SECTION("network_tier: best is a no-op on slurm, refused on k8s; standard needs nothing") {
        spec.resources.hints["network_tier"] = "best";
        CHECK(unsupported_fields(spec, spec.resources, BackendKind::slurm).empty());
        CHECK_FALSE(note_for(spec, BackendKind::slurm, "resources.network_tier").empty());
        CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "resources.network_tier") ==
              "not supported on k8s: Custom network tier is currently not supported in Kubernetes.");
        spec.resources.hints["network_tier"] = "standard";
        CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
    }
    SECTION("autostop stops are refused; autodown and autostop: false are accepted") {
        for (const auto& stop : {nlohmann::json(true), nlohmann::json(10), nlohmann::json("10m"),
                                 nlohmann::json{{"idle_minutes", 5}}}) {
            spec.resources.hints["autostop"] = stop;
            INFO(stop.dump());
            CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "resources.autostop") ==
                  "not supported on slurm: Slurm does not support autostop.");
            CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "resources.autostop") ==
                  "not supported on k8s: Auto-stop is not supported on Kubernetes.");
        }
        for (const auto& fine : {nlohmann::json(false), nlohmann::json{{"idle_minutes", 5}, {"down", true}}}) {
            spec.resources.hints["autostop"] = fine;
            for (auto kind : k_all_kinds) {
                CHECK(unsupported_fields(spec, spec.resources, kind).empty());
                CHECK_FALSE(note_for(spec, kind, "resources.autostop").empty());
            }
        }
    }
    SECTION("local_disk is refused on slurm only") {
        spec.resources.hints["local_disk"] = "nvme:1";
        CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "resources.local_disk") ==
              "not supported on slurm: Local disk is not supported on Slurm");
        CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
    }
    SECTION("managed-job and cost fields are accepted and noted everywhere; Slurm and Kubernetes apply "
            "job_recovery") {
        spec.resources.hints["job_recovery"] = "FAILOVER";
        spec.resources.hints["max_hourly_cost"] = 3;
        spec.resources.hints["priority"] = 10;
        for (auto kind : k_all_kinds) {
            CHECK(unsupported_fields(spec, spec.resources, kind).empty());
            CHECK(ignored_fields(spec, spec.resources, kind).size() == (kind == BackendKind::local ? 3u : 2u));
        }
        CHECK(note_for(spec, BackendKind::slurm, "resources.job_recovery").empty());
        CHECK(note_for(spec, BackendKind::kubernetes, "resources.job_recovery").empty());
        CHECK_FALSE(note_for(spec, BackendKind::local, "resources.job_recovery").empty());
    }
    SECTION("priority_class is honoured on k8s, noted elsewhere") {
        spec.resources.hints["priority_class"] = "high";
        CHECK(note_for(spec, BackendKind::kubernetes, "resources.priority_class").empty());
        CHECK_FALSE(note_for(spec, BackendKind::slurm, "resources.priority_class").empty());
    }
}

TEST_CASE("backend support: image_id runs only on kubernetes") {
    TaskSpec spec;
    // emplace, not `=`: GCC 12 at -O2 warns (falsely) maybe-uninitialized on optional<string> = literal.
    spec.resources.image_id.emplace("nvcr.io/nvidia/pytorch:24.01-py3");
    CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "resources.image_id") ==
          "not supported on slurm: jobs run on the node's own OS (no container runtime)");
    CHECK_THAT(reason_for(spec, spec.resources, BackendKind::local, "resources.image_id"),
               Catch::StartsWith("not supported on local: ") && Catch::Contains("no container runtime"));
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
}

TEST_CASE("backend support: ports are refused on slurm only") {
    TaskSpec spec;
    spec.resources.ports = {"8080"};
    CHECK(fields_of(unsupported_fields(spec, spec.resources, BackendKind::slurm)) ==
          std::vector<std::string>{"resources.ports"});
    CHECK_THAT(reason_for(spec, spec.resources, BackendKind::slurm, "resources.ports"),
               Catch::StartsWith("not supported on slurm: "));
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::local).empty());
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
}

TEST_CASE("backend support: labels are honoured by kubernetes, accepted and noted elsewhere (as SkyPilot)") {
    TaskSpec spec;
    spec.resources.labels = {{"team", "vision"}};
    for (auto kind : k_all_kinds) {
        CHECK(unsupported_fields(spec, spec.resources, kind).empty());
    }
    CHECK_THAT(note_for(spec, BackendKind::slurm, "resources.labels"), Catch::StartsWith("ignored on slurm: "));
    CHECK_THAT(note_for(spec, BackendKind::local, "resources.labels"), Catch::StartsWith("ignored on local: "));
    CHECK(note_for(spec, BackendKind::kubernetes, "resources.labels").empty());
}

TEST_CASE("backend support: disk_size is a VM's disk in SkyPilot: accepted and noted everywhere") {
    TaskSpec spec;
    spec.resources.disk_size_gb = 200;
    for (auto kind : k_all_kinds) {
        CHECK(unsupported_fields(spec, spec.resources, kind).empty());
        CHECK_FALSE(note_for(spec, kind, "resources.disk_size").empty());
    }
}

TEST_CASE("backend support: fractional GPUs need kubernetes") {
    TaskSpec spec;
    spec.resources.accelerators = {{"A100", 0.5}};
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
    CHECK_THAT(reason_for(spec, spec.resources, BackendKind::slurm, "resources.accelerators"),
               Catch::StartsWith("not supported on slurm: fractional GPUs need MIG or time-sliced GPUs"));
    CHECK_THAT(reason_for(spec, spec.resources, BackendKind::local, "resources.accelerators"),
               Catch::StartsWith("not supported on local: fractional GPUs need MIG or time-sliced GPUs"));

    SECTION("a whole GPU count is not fractional") {
        spec.resources.accelerators = {{"A100", 1}};
        CHECK(unsupported_fields(spec, spec.resources, BackendKind::slurm).empty());
    }
    SECTION("the resources passed in are checked, not the spec's base resources") {
        Resources whole;
        whole.accelerators = {{"A100", 2}};
        CHECK(unsupported_fields(spec, whole, BackendKind::slurm).empty());
    }
}

TEST_CASE("backend support: more than one node is refused on local only") {
    TaskSpec spec;
    spec.num_nodes = 2;
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::slurm).empty());
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
    CHECK(reason_for(spec, spec.resources, BackendKind::local, "num_nodes") ==
          "not supported on local: local runs one node");

    spec.num_nodes = 1;
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::local).empty());
}

TEST_CASE("backend support: local file_mounts go to Slurm and Kubernetes, object stores are refused everywhere, named") {
    TaskSpec spec;
    spec.file_mounts["/code"] = "/home/me/code";
    CHECK(reason_for(spec, spec.resources, BackendKind::local, "file_mounts") ==
          "not supported on local: the task runs on this machine, where its files already are: use their paths");
    CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "file_mounts").empty());
    CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "file_mounts").empty());

    TaskSpec store;
    store.file_mounts["/data"] = "s3://bucket/data";
    store.file_mounts["/ckpt"] = nlohmann::json{{"name", "my-bucket"}, {"store", "gcs"}, {"mode", "MOUNT"}};
    store.file_mounts["/in"] = nlohmann::json{{"source", "gs://in\nput"}, {"mode", "COPY"}};
    for (auto kind : k_all_kinds) {
        CHECK(reason_for(store, store.resources, kind, "file_mounts").empty());
        const auto data = reason_for(store, store.resources, kind, "file_mounts./data");
        CHECK_THAT(data, Catch::Contains("s3://bucket/data is an object store or a SkyPilot storage object"));
        CHECK_THAT(reason_for(store, store.resources, kind, "file_mounts./ckpt"),
                   Catch::Contains("a storage object is an object store"));
        const auto in = reason_for(store, store.resources, kind, "file_mounts./in");
        CHECK_THAT(in, Catch::Contains("gs://in?put"));
        CHECK(in.find('\n') == std::string::npos);
    }
}

TEST_CASE("backend support: settings addressed to one backend are ignored by the others") {
    TaskSpec spec;
    spec.kubernetes.namespace_name.emplace("ml");
    spec.kubernetes.queue.emplace("team-a");
    spec.kubernetes.pod_config = nlohmann::json{{"spec", {{"priorityClassName", "high"}}}};
    spec.slurm.partition.emplace("gpu");
    spec.slurm.account.emplace("proj");
    spec.slurm.time.emplace("1-00:00:00");
    for (auto kind : k_all_kinds) {
        CHECK(unsupported_fields(spec, spec.resources, kind).empty());
    }
}

TEST_CASE("backend support: every unsupported field is reported, in table order, each naming the backend") {
    TaskSpec spec;
    spec.num_nodes = 4;
    spec.resources.use_spot = true;
    spec.resources.image_id.emplace("ubuntu:22.04");
    spec.resources.ports = {"8888"};
    spec.resources.labels = {{"a", "b"}};
    spec.resources.disk_size_gb = 100;
    spec.resources.accelerators = {{"A100", 0.25}};
    spec.file_mounts["/x"] = "y";

    const auto local = unsupported_fields(spec, spec.resources, BackendKind::local);
    CHECK(fields_of(local) == std::vector<std::string>{"resources.use_spot", "resources.image_id",
                                                       "resources.accelerators", "num_nodes", "file_mounts"});
    const auto slurm = unsupported_fields(spec, spec.resources, BackendKind::slurm);
    CHECK(fields_of(slurm) == std::vector<std::string>{"resources.use_spot", "resources.image_id",
                                                       "resources.accelerators", "resources.ports"});
    const auto k8s = unsupported_fields(spec, spec.resources, BackendKind::kubernetes);
    CHECK(fields_of(k8s) == std::vector<std::string>{"resources.use_spot"});

    for (const auto& u : local) {
        CHECK_THAT(u.reason, Catch::StartsWith("not supported on local: "));
    }
    for (const auto& u : slurm) {
        CHECK_THAT(u.reason, Catch::StartsWith("not supported on slurm: "));
    }
    for (const auto& u : k8s) {
        CHECK_THAT(u.reason, Catch::StartsWith("not supported on k8s: "));
    }
}
