// A Kubernetes status List (Jobs or pods, JSON) through skim_status_list (backends/k8s/job_state_skim.hpp),
// then through the state mapping (group_by_tandem_job, to_job_update, pods_decide) as `status` reads it.
// Invariants (the header's promise): on valid JSON the skim equals the full parse with every member outside
// its table removed, and it fails only when the full parse shows why (not an object, no "items", an item
// that is not an object, kept values nested over 64 deep; inputs with duplicate member names are left out,
// since nlohmann keeps the last and the skimmer may stop at the first). A skim dumps and skims to itself.

#include <algorithm>
#include <set>
#include <vector>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/job_state_skim.hpp"
#include "fuzz_common.hpp"

namespace {

using nlohmann::json;

// The skimmer's table (job_state_skim.cpp), as nested sets of member names; nullptr keeps the whole value.
struct Shape {
    std::vector<std::pair<std::string_view, const Shape*>> members;
    const Shape* find(std::string_view key, bool& found) const {
        for (const auto& [name, shape] : members) {
            if (name == key) {
                found = true;
                return shape;
            }
        }
        found = false;
        return nullptr;
    }
};
const Shape k_labels{
    {{"tandem.dev/job", nullptr}, {"tandem.dev/rank", nullptr}, {"tandem.dev/user", nullptr}}};
const Shape k_annotations{{{"batch.kubernetes.io/job-completion-index", nullptr},
                           {"tandem.dev/identity", nullptr},
                           {"tandem.dev/recover-on-exit-codes", nullptr},
                           {"tandem.dev/sweep-size", nullptr}}};
const Shape k_metadata{{{"name", nullptr},
                        {"namespace", nullptr},
                        {"uid", nullptr},
                        {"resourceVersion", nullptr},
                        {"creationTimestamp", nullptr},
                        {"deletionTimestamp", nullptr},
                        {"labels", &k_labels},
                        {"annotations", &k_annotations}}};
const Shape k_spec{
    {{"nodeName", nullptr}, {"completions", nullptr}, {"completionMode", nullptr}, {"parallelism", nullptr}}};
const Shape k_container_status{{{"name", nullptr},
                                {"state", nullptr},
                                {"lastState", nullptr},
                                {"ready", nullptr},
                                {"restartCount", nullptr}}};
const Shape k_status{{{"phase", nullptr},
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
                      {"initContainerStatuses", &k_container_status}}};
const Shape k_item{{{"apiVersion", nullptr},
                    {"kind", nullptr},
                    {"metadata", &k_metadata},
                    {"spec", &k_spec},
                    {"status", &k_status}}};

// The Deployment table (skim_deployment_list, for `serve status`).
const Shape k_deployment_labels{{{"tandem.dev/service", nullptr}}};
const Shape k_deployment_annotations{
    {{"tandem.dev/service-version", nullptr}, {"tandem.dev/autoscale", nullptr}, {"tandem.dev/endpoint", nullptr}}};
const Shape k_deployment_metadata{{{"name", nullptr},
                                   {"namespace", nullptr},
                                   {"generation", nullptr},
                                   {"creationTimestamp", nullptr},
                                   {"deletionTimestamp", nullptr},
                                   {"labels", &k_deployment_labels},
                                   {"annotations", &k_deployment_annotations}}};
const Shape k_deployment_spec{{{"replicas", nullptr}}};
const Shape k_deployment_status{{{"observedGeneration", nullptr},
                                 {"replicas", nullptr},
                                 {"readyReplicas", nullptr},
                                 {"updatedReplicas", nullptr},
                                 {"availableReplicas", nullptr},
                                 {"conditions", nullptr}}};
const Shape k_deployment{{{"apiVersion", nullptr},
                          {"kind", nullptr},
                          {"metadata", &k_deployment_metadata},
                          {"spec", &k_deployment_spec},
                          {"status", &k_deployment_status}}};

constexpr int k_max_depth = 64;

// One kept value at `depth`, as the skimmer's value() reads it.
json keep(const json& v, const Shape* shape, int depth, bool& too_deep) {
    too_deep = too_deep || depth > k_max_depth;
    if (v.is_object()) {
        json out = json::object();
        for (const auto& [key, member] : v.items()) {
            bool found = shape == nullptr;
            const Shape* inner = shape == nullptr ? nullptr : shape->find(key, found);
            if (found) {
                out[key] = keep(member, inner, depth + 1, too_deep);
            }
        }
        return out;
    }
    if (v.is_array()) {
        json out = json::array();
        for (const auto& e : v) {
            out.push_back(keep(e, shape, depth + 1, too_deep));
        }
        return out;
    }
    return v;
}

// What the skim of `full` should be; nullopt when the skimmer must refuse it.
std::optional<json> expected_skim(const json& full, bool& too_deep, const Shape& item_shape) {
    if (!full.is_object() || !full.contains("items") || !full["items"].is_array()) {
        return std::nullopt;
    }
    json out = json::object();
    for (const char* key : {"kind", "apiVersion", "metadata"}) {
        if (full.contains(key)) {
            out[key] = keep(full[key], nullptr, 1, too_deep);
        }
    }
    json items = json::array();
    for (const auto& item : full["items"]) {
        if (!item.is_object()) {
            return std::nullopt;
        }
        json kept = json::object();
        for (const auto& [key, member] : item.items()) {
            bool found = false;
            const Shape* inner = item_shape.find(key, found);
            if (found) {
                kept[key] = keep(member, inner, 2, too_deep);
            }
        }
        items.push_back(std::move(kept));
    }
    out["items"] = std::move(items);
    return out;
}

// True when some object of the text names a member twice (nlohmann keeps the last silently).
struct DuplicateFinder : nlohmann::json_sax<json> {
    std::vector<std::set<std::string>> keys;
    bool duplicate = false;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        keys.emplace_back();
        return true;
    }
    bool key(string_t& k) override {
        duplicate = duplicate || !keys.back().insert(k).second;
        return true;
    }
    bool end_object() override {
        keys.pop_back();
        return true;
    }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return false;
    }
};

// One skimmer against the filtered full parse of `full` (the invariants in the file's comment).
template <typename Skim>
tandem::Result<json> check_skim(std::string_view text, const json& full, const Shape& shape, Skim skim_fn,
                                const char* name) {
    const auto skim = skim_fn(text);
    fuzz::check_error_one_line(skim, (std::string(name) + ": error is one line").c_str());
    if (!full.is_discarded()) {
        bool too_deep = false;
        const auto expected = expected_skim(full, too_deep, shape);
        DuplicateFinder dups;
        json::sax_parse(text.begin(), text.end(), &dups);
        if (skim && expected && *skim != *expected) {
            fuzz::broken((std::string(name) + " equals the filtered full parse").c_str(),
                         skim->dump() + "\n" + expected->dump());
        }
        if (skim && !expected && !dups.duplicate) {
            fuzz::broken((std::string(name) + " accepts only a List of objects").c_str(), skim->dump());
        }
        // nlohmann's lexer takes a NUL byte for the end of the input and ignores what follows; the skimmer
        // reads every byte and refuses trailing ones, as a server's answer with bytes after its JSON is bad.
        const bool nul_ends_full_parse = text.find('\0') != std::string_view::npos;
        if (!skim && expected && !too_deep && !dups.duplicate && !nul_ends_full_parse) {
            fuzz::broken((std::string(name) + " refuses only what the full parse shows is wrong").c_str(),
                         skim.error().message);
        }
    }
    if (skim) {
        const auto again = skim_fn(skim->dump());
        fuzz::check(again && *again == *skim, "a skim skims to itself");
    }
    return skim;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::k8s;
    const auto text = fuzz::text(data, size);
    const json full = json::parse(text.begin(), text.end(), nullptr, false);
    (void)check_skim(text, full, k_deployment, skim_deployment_list, "skim_deployment_list");
    const auto skim = check_skim(text, full, k_item, skim_status_list, "skim_status_list");
    if (!skim) {
        return 0;
    }
    const auto groups = group_by_tandem_job(*skim, *skim, full.is_object() ? &full : nullptr);
    for (auto [name, view] : groups) {
        // As every caller does (k8s_backend.cpp, k8s_watch.cpp): the ranks are the record's num_nodes, not
        // what the objects claim (a Job's spec.completions may say 2^31).
        view.expected_ranks = std::min(view.expected_ranks, 64);
        (void)to_job_update(view);
        (void)pods_decide(view);
    }
    return 0;
}
