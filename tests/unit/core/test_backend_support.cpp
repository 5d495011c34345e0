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

TEST_CASE("backend support: use_spot is refused everywhere with the backend named") {
    TaskSpec spec;
    spec.resources.use_spot = true;
    CHECK(reason_for(spec, spec.resources, BackendKind::local, "resources.use_spot") ==
          "not supported on local: local has no spot capacity");
    CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "resources.use_spot") ==
          "not supported on slurm: slurm has no spot capacity");
    CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "resources.use_spot") ==
          "not supported on k8s: k8s has no spot capacity");
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

TEST_CASE("backend support: labels are honoured by kubernetes only") {
    TaskSpec spec;
    spec.resources.labels = {{"team", "vision"}};
    CHECK(fields_of(unsupported_fields(spec, spec.resources, BackendKind::slurm)) ==
          std::vector<std::string>{"resources.labels"});
    CHECK(fields_of(unsupported_fields(spec, spec.resources, BackendKind::local)) ==
          std::vector<std::string>{"resources.labels"});
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
}

TEST_CASE("backend support: disk_size maps to ephemeral storage and --tmp, not to the local machine") {
    TaskSpec spec;
    spec.resources.disk_size_gb = 200;
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::kubernetes).empty());
    CHECK(unsupported_fields(spec, spec.resources, BackendKind::slurm).empty());
    CHECK(fields_of(unsupported_fields(spec, spec.resources, BackendKind::local)) ==
          std::vector<std::string>{"resources.disk_size_gb"});
    CHECK_THAT(reason_for(spec, spec.resources, BackendKind::local, "resources.disk_size_gb"),
               Catch::StartsWith("not supported on local: "));
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

TEST_CASE("backend support: file_mounts are not supported anywhere yet") {
    TaskSpec spec;
    spec.file_mounts["/data"] = "s3://bucket/data";
    CHECK(reason_for(spec, spec.resources, BackendKind::local, "file_mounts") ==
          "not supported on local: file_mounts are not supported on local yet");
    CHECK(reason_for(spec, spec.resources, BackendKind::slurm, "file_mounts") ==
          "not supported on slurm: file_mounts are not supported on slurm yet");
    CHECK(reason_for(spec, spec.resources, BackendKind::kubernetes, "file_mounts") ==
          "not supported on k8s: file_mounts are not supported on k8s yet");
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
    CHECK(fields_of(local) ==
          std::vector<std::string>{"resources.use_spot", "resources.image_id", "resources.accelerators",
                                   "num_nodes", "resources.labels", "resources.disk_size_gb", "file_mounts"});
    const auto slurm = unsupported_fields(spec, spec.resources, BackendKind::slurm);
    CHECK(fields_of(slurm) == std::vector<std::string>{"resources.use_spot", "resources.image_id",
                                                       "resources.accelerators", "resources.ports",
                                                       "resources.labels", "file_mounts"});
    const auto k8s = unsupported_fields(spec, spec.resources, BackendKind::kubernetes);
    CHECK(fields_of(k8s) == std::vector<std::string>{"resources.use_spot", "file_mounts"});

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
