// The status List skimmer (see job_state_skim.hpp): a table of the members to keep, read by the one JSON
// scanner (core/json_skim.hpp), which steps over the rest.

#include "backends/k8s/job_state_skim.hpp"

#include "backends/k8s/labels.hpp"
#include "core/json_skim.hpp"

namespace tandem::k8s {

namespace {

using nlohmann::json;

using json_skim::Member;
using json_skim::Shape;

// Of the labels, the two job_state reads: a pod carries six, and each kept one is three allocations.
constexpr Member k_label_members[] = {{k_job_label, nullptr}, {k_rank_label, nullptr}, {k_user_label, nullptr}};
constexpr Shape k_labels{k_label_members};
constexpr Member k_annotation_members[] = {{k_completion_index_annotation, nullptr},
                                           {k_identity_annotation, nullptr},
                                           {k_recover_codes_annotation, nullptr},
                                           {k_sweep_annotation, nullptr}};
constexpr Shape k_annotations{k_annotation_members};
constexpr Member k_metadata_members[] = {{"name", nullptr},
                                         {"namespace", nullptr},
                                         {"uid", nullptr},
                                         {"resourceVersion", nullptr},
                                         {"creationTimestamp", nullptr},
                                         {"deletionTimestamp", nullptr},
                                         {"labels", &k_labels},
                                         {"annotations", &k_annotations}};
constexpr Shape k_metadata{k_metadata_members};
constexpr Member k_spec_members[] = {
    {"nodeName", nullptr}, {"completions", nullptr}, {"completionMode", nullptr}, {"parallelism", nullptr}};
constexpr Shape k_spec{k_spec_members};
constexpr Member k_container_status_members[] = {{"name", nullptr},
                                                 {"state", nullptr},
                                                 {"lastState", nullptr},
                                                 {"ready", nullptr},
                                                 {"restartCount", nullptr}};
constexpr Shape k_container_status{k_container_status_members};
constexpr Member k_status_members[] = {{"phase", nullptr},
                                       {"reason", nullptr},
                                       {"message", nullptr},
                                       {"conditions", nullptr},
                                       {"startTime", nullptr},
                                       {"completionTime", nullptr},
                                       {"active", nullptr},
                                       {"succeeded", nullptr},
                                       {"failed", nullptr},
                                       {"failedIndexes", nullptr},
                                       {"containerStatuses", &k_container_status},
                                       {"initContainerStatuses", &k_container_status}};
constexpr Shape k_status{k_status_members};
constexpr Member k_item_members[] = {{"apiVersion", nullptr},
                                     {"kind", nullptr},
                                     {"metadata", &k_metadata},
                                     {"spec", &k_spec},
                                     {"status", &k_status}};
constexpr Shape k_item{k_item_members};

// A service's Deployment as `serve status` reads it (backends/k8s/k8s_serve.cpp): its name, labels,
// annotations and counts, not its pod template (most of its bytes).
constexpr Member k_deployment_label_members[] = {{"tandem.dev/service", nullptr}};
constexpr Shape k_deployment_labels{k_deployment_label_members};
constexpr Member k_deployment_annotation_members[] = {
    {"tandem.dev/service-version", nullptr}, {"tandem.dev/autoscale", nullptr}, {"tandem.dev/endpoint", nullptr}};
constexpr Shape k_deployment_annotations{k_deployment_annotation_members};
constexpr Member k_deployment_metadata_members[] = {{"name", nullptr},
                                                    {"namespace", nullptr},
                                                    {"generation", nullptr},
                                                    {"creationTimestamp", nullptr},
                                                    {"deletionTimestamp", nullptr},
                                                    {"labels", &k_deployment_labels},
                                                    {"annotations", &k_deployment_annotations}};
constexpr Shape k_deployment_metadata{k_deployment_metadata_members};
constexpr Member k_deployment_spec_members[] = {{"replicas", nullptr}};
constexpr Shape k_deployment_spec{k_deployment_spec_members};
constexpr Member k_deployment_status_members[] = {{"observedGeneration", nullptr}, {"replicas", nullptr},
                                                  {"readyReplicas", nullptr},      {"updatedReplicas", nullptr},
                                                  {"availableReplicas", nullptr},  {"conditions", nullptr}};
constexpr Shape k_deployment_status{k_deployment_status_members};
constexpr Member k_deployment_members[] = {{"apiVersion", nullptr},
                                           {"kind", nullptr},
                                           {"metadata", &k_deployment_metadata},
                                           {"spec", &k_deployment_spec},
                                           {"status", &k_deployment_status}};
constexpr Shape k_deployment{k_deployment_members};

// The List's frame: its items take `item`'s shape; kind, apiVersion and metadata are kept whole.
Result<json> skim_list(std::string_view body, const Shape& item) {
    json_skim::Scanner scan(body);
    json out = json::object();
    auto items = [&](json& list) {
        if (!scan.next_is('[')) {
            return scan.error("\"items\" is not an array");
        }
        list = json::array();
        scan.take('[');
        if (scan.take(']')) {
            return true;
        }
        do {
            if (!scan.next_is('{')) {
                return scan.error("an item is not an object");
            }
            if (!scan.value(list.emplace_back(), &item, 1)) {
                return false;
            }
        } while (scan.take(','));
        return scan.expect(']');
    };
    bool ok = scan.next_is('{') || scan.error("not a JSON object");
    ok = ok && scan.members([&](const std::string& key) {
        if (key == "items") {
            return items(out["items"]);
        }
        return key == "kind" || key == "apiVersion" || key == "metadata" ? scan.value(out[key], nullptr, 1)
                                                                         : scan.skip_value();
    });
    ok = ok && (scan.at_end() || scan.error("text after the List"));
    ok = ok && (out.contains("items") || scan.error("not a List (no \"items\")"));
    if (!ok) {
        return fail(ErrorKind::remote, scan.error_text());
    }
    return out;
}

} // namespace

Result<json> skim_status_list(std::string_view body) {
    return skim_list(body, k_item);
}

Result<json> skim_deployment_list(std::string_view body) {
    return skim_list(body, k_deployment);
}

} // namespace tandem::k8s
