// The status List skimmer (backends/k8s/job_state_skim.*) against the full parse: on every recorded List
// it keeps exactly the members job_state reads, maps every job to the same state, and refuses malformed
// text (truncated, wrong types, bad strings) with a message instead of crashing.

#include <fstream>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/job_state_skim.hpp"
#include "k8s_fixtures.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

std::string fixture_text(const std::string& file) {
    std::ifstream in(std::string(TANDEM_FIXTURES) + "/k8s/" + file);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

const std::vector<std::string> k_lists = {
    "status_jobs.json",         "status_pods.json",         "inventory_pods.json",
    "recorded-v1.20/jobs.json", "recorded-v1.20/pods.json", "recorded-v1.20/pods_all_namespaces.json"};

// The skimmer's table written out again over the DOM: what a full parse keeps once pruned.
json keep_only(const json& obj, const std::set<std::string>& keys) {
    json out = json::object();
    for (const auto& [k, v] : obj.items()) {
        if (keys.count(k)) {
            out[k] = v;
        }
    }
    return out;
}

json container_statuses(const json& list) {
    json out = json::array();
    for (const auto& cs : list) {
        out.push_back(keep_only(cs, {"name", "state", "lastState", "ready", "restartCount"}));
    }
    return out;
}

json pruned(const json& list) {
    json out = keep_only(list, {"kind", "apiVersion", "metadata"});
    out["items"] = json::array();
    for (const auto& item : list.at("items")) {
        json kept = keep_only(item, {"kind", "apiVersion"});
        if (item.contains("metadata")) {
            const auto& m = item["metadata"];
            kept["metadata"] = keep_only(
                m, {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"});
            if (m.contains("labels")) {
                kept["metadata"]["labels"] = keep_only(m["labels"], {"tandem.dev/job", "tandem.dev/rank", "tandem.dev/user"});
            }
            if (m.contains("annotations")) {
                kept["metadata"]["annotations"] =
                    keep_only(m["annotations"], {"batch.kubernetes.io/job-completion-index", "tandem.dev/identity"});
            }
        }
        if (item.contains("spec")) {
            kept["spec"] =
                keep_only(item["spec"], {"nodeName", "completions", "completionMode", "parallelism"});
        }
        if (item.contains("status")) {
            const auto& s = item["status"];
            kept["status"] = keep_only(s, {"phase", "reason", "message", "conditions", "startTime",
                                           "completionTime", "active", "succeeded", "failed"});
            for (const char* key : {"containerStatuses", "initContainerStatuses"}) {
                if (s.contains(key)) {
                    kept["status"][key] = container_statuses(s[key]);
                }
            }
        }
        out["items"].push_back(std::move(kept));
    }
    return out;
}

json skim(std::string_view text) {
    auto list = skim_status_list(text);
    INFO((list ? std::string() : list.error().message));
    REQUIRE(list);
    return *list;
}

std::string skim_error(std::string_view text) {
    auto list = skim_status_list(text);
    REQUIRE_FALSE(list);
    CHECK(list.error().kind == ErrorKind::remote);
    return list.error().message;
}

// A one-pod list whose first pod's status.message is the given JSON text (a kept string).
std::string pod_with_message(const std::string& message_json) {
    return R"({"kind":"PodList","items":[{"metadata":{"name":"p"},"status":{"phase":"Failed","message":)" +
           message_json + "}}]}";
}

} // namespace

TEST_CASE("skim: every recorded List equals the full parse with the unread members removed") {
    for (const auto& file : k_lists) {
        INFO(file);
        const auto text = fixture_text(file);
        const auto full = json::parse(text);
        const auto skimmed = skim(text);
        CHECK(skimmed == pruned(full));
        // The layout does not matter: compact and indented dumps skim alike.
        CHECK(skim(full.dump()) == skimmed);
        CHECK(skim(full.dump(4)) == skimmed);
        // What the skimmer drops is what makes a List big.
        CHECK(skimmed.dump().size() * 2 < text.size());
    }
}

TEST_CASE("skim: every recorded job maps to the same state from skimmed and fully parsed Lists") {
    const auto events = k8s_fixture("recorded-v1.20/events.json");
    for (const auto& [jobs_file, pods_file] :
         {std::pair<std::string, std::string>{"recorded-v1.20/jobs.json", "recorded-v1.20/pods.json"},
          {"status_jobs.json", "status_pods.json"}}) {
        INFO(jobs_file);
        const auto full_jobs = json::parse(fixture_text(jobs_file));
        const auto full_pods = json::parse(fixture_text(pods_file));
        const auto jobs = skim(fixture_text(jobs_file));
        const auto pods = skim(fixture_text(pods_file));
        const auto full = group_by_tandem_job(full_jobs, full_pods, &events);
        const auto skimmed = group_by_tandem_job(jobs, pods, &events);
        REQUIRE(full.size() == skimmed.size());
        REQUIRE(full.size() >= 5); // each fixture holds several jobs in different states
        for (const auto& [name, view] : full) {
            INFO(name);
            REQUIRE(skimmed.count(name) == 1);
            const auto& other = skimmed.at(name);
            CHECK(other.expected_ranks == view.expected_ranks);
            CHECK(pods_decide(other) == pods_decide(view));
            const auto a = to_job_update(view);
            const auto b = to_job_update(other);
            CHECK(a.state == b.state);
            CHECK(a.reason == b.reason);
            CHECK(a.exit_code == b.exit_code);
            CHECK(a.started_at == b.started_at);
            CHECK(a.ended_at == b.ended_at);
        }
    }
}

TEST_CASE("skim: kept strings and numbers read as nlohmann reads them") {
    for (const std::string message : {R"("plain")",
                                      R"("tab\there \"quoted\" back\\slash \/ \b\f\r\n")",
                                      R"("\u00e9t\u00E9 \ud83d\ude80")",
                                      R"("caf\u00e9 and raw UTF-8: caf)"
                                      "\xc3\xa9"
                                      R"( \u2603")",
                                      R"("")",
                                      "137",
                                      "-3",
                                      "0",
                                      "3.25",
                                      "-1.5e3",
                                      "1E+2",
                                      "18446744073709551615",
                                      "-9223372036854775808",
                                      "18446744073709551616",
                                      "true",
                                      "false",
                                      "null",
                                      R"({"a":[1,{"b":null}]})",
                                      "[]",
                                      "{}"}) {
        INFO(message);
        const auto text = pod_with_message(message);
        const auto full = json::parse(text);
        const auto skimmed = skim(text);
        CHECK(skimmed == pruned(full));
        CHECK(skimmed["items"][0]["status"]["message"].type() ==
              full["items"][0]["status"]["message"].type());
    }
    // Escapes in member names are decoded before they are matched.
    const auto skimmed = skim(R"({"items":[{"metadata":{"n\u0061me":"p","na\"me":"x"}}]})");
    CHECK(skimmed["items"][0]["metadata"] == json{{"name", "p"}});
}

TEST_CASE("skim: skipped subtrees are stepped over whatever they hold") {
    const std::string text =
        R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"extra":[1,"]}\"[{",{"x":"\\"}],)"
        R"("items":[{"metadata":{"name":"p","managedFields":[{"fieldsV1":{"f:spec":{"}":"{\\\""}}}]},)"
        R"("spec":{"containers":[{"command":["sh","-c","echo \"}]\" ]["]}],"nodeName":"n1","x":-1.5e-3},)"
        R"("status":{"phase":"Running","podIPs":[{"ip":"10.0.0.1"}],"qosClass":"BestEffort"}}]})";
    const auto skimmed = skim(text);
    CHECK(skimmed == pruned(json::parse(text)));
    CHECK(skimmed["items"][0]["spec"] == json{{"nodeName", "n1"}});
    CHECK(skimmed["metadata"]["resourceVersion"] == "7");
    // A deep skipped subtree needs no recursion.
    const std::string deep = std::string(R"({"items":[{"spec":{"x":)") + std::string(100000, '[') +
                             std::string(100000, ']') + "}}]}";
    CHECK(skim(deep)["items"][0]["spec"] == json::object());
}

TEST_CASE("skim: truncated text is an error at every length, never a crash") {
    const auto text = fixture_text("recorded-v1.20/pods.json");
    const std::size_t whole = text.rfind('}') + 1; // shorter prefixes are all broken
    for (std::size_t n = 0; n < whole; n += n < 400 || n + 400 > whole ? 1 : 37) {
        INFO(n);
        auto list = skim_status_list(std::string_view(text).substr(0, n));
        REQUIRE_FALSE(list);
        CHECK_FALSE(list.error().message.empty());
    }
    CHECK_THAT(skim_error(text.substr(0, text.size() / 2)), Catch::Contains("truncated after"));
    CHECK_THAT(skim_error(""), Catch::Contains("not a JSON object"));
}

TEST_CASE("skim: wrong shapes and bad JSON are errors that say what and where") {
    using Catch::Contains;
    CHECK_THAT(skim_error("[]"), Contains("not a JSON object at byte 0"));
    CHECK_THAT(skim_error(R"({"kind":"Status","status":"Failure"})"), Contains("not a List"));
    CHECK_THAT(skim_error(R"({"items":5})"), Contains("\"items\" is not an array at byte 9"));
    CHECK_THAT(skim_error(R"({"items":{}})"), Contains("\"items\" is not an array"));
    CHECK_THAT(skim_error(R"({"items":[1]})"), Contains("an item is not an object at byte 10"));
    CHECK_THAT(skim_error(R"({"items":[{"metadata":{"name":"p"}} {}]})"), Contains("expected ']'"));
    CHECK_THAT(skim_error(R"({"items":[] } x)"), Contains("text after the List"));
    CHECK_THAT(skim_error(R"({"items":[{"spec":{"containers":[}]}}]})"), Contains("unexpected '}'"));
    CHECK_THAT(skim_error(R"({"items":[{"spec":{"containers":[{"a":1}}}]})"), Contains("unexpected '}'"));
    CHECK_THAT(skim_error(R"({"items":[{"metadata" "name"}]})"), Contains("expected ':'"));
    CHECK_THAT(skim_error(R"({"items":[{metadata:1}]})"), Contains("expected a member name"));
    CHECK_THAT(skim_error(R"({"items":[{"spec":tru}]})"), Contains("expected a value"));
    CHECK_THAT(skim_error(pod_with_message("01")), Contains("expected a value"));
    CHECK_THAT(skim_error(pod_with_message("1.")), Contains("bad number"));
    CHECK_THAT(skim_error(pod_with_message("1e999")), Contains("bad number"));
    CHECK_THAT(skim_error(pod_with_message(R"("bad \x escape")")), Contains("bad escape in a string"));
    CHECK_THAT(skim_error(pod_with_message(R"("\u12")")), Contains("bad escape in a string"));
    CHECK_THAT(skim_error(pod_with_message(R"("half \ud83d")")), Contains("lone surrogate"));
    CHECK_THAT(skim_error(pod_with_message(R"("\ude80")")), Contains("lone surrogate"));
    CHECK_THAT(skim_error(pod_with_message("\"\xc3(\"")), Contains("invalid UTF-8"));
    CHECK_THAT(skim_error(pod_with_message("\"\xed\xa0\x80\"")), Contains("invalid UTF-8"));
    CHECK_THAT(skim_error(pod_with_message("\"line\nbreak\"")), Contains("control character"));
    CHECK_THAT(skim_error(pod_with_message(R"("never closed)")), Contains("unterminated string"));
    CHECK_THAT(skim_error(pod_with_message(R"("escaped quote at the end\")")),
               Contains("unterminated string"));
    const std::string deep_kept = std::string(R"({"items":[{"status":{"conditions":)") +
                                  std::string(100, '[') + std::string(100, ']') + "}}]}";
    CHECK_THAT(skim_error(deep_kept), Contains("nested too deeply"));
}

TEST_CASE("skim: members of the wrong type are filtered by the same table and read as absent") {
    const std::string text = R"({"items":[{"metadata":"p","spec":[{"nodeName":"n"}],"status":{"phase":3,)"
                             R"("containerStatuses":{"name":"main","image":"x"},"conditions":"no"}}]})";
    const auto skimmed = skim(text);
    const auto full = json::parse(text);
    CHECK(skimmed["items"][0]["metadata"] == "p");
    CHECK(skimmed["items"][0]["spec"] == json::array({{{"nodeName", "n"}}}));
    CHECK(skimmed["items"][0]["status"]["containerStatuses"] == json{{"name", "main"}});
    const json no_jobs = {{"items", json::array()}};
    CHECK(group_by_tandem_job(no_jobs, skimmed, nullptr).empty()); // no tandem.dev/job label: skipped
    JobView view;
    view.pods.push_back(&skimmed["items"][0]);
    view.jobs_unread = true;
    JobView full_view;
    full_view.pods.push_back(&full["items"][0]);
    full_view.jobs_unread = true;
    CHECK(to_job_update(view).state == to_job_update(full_view).state);
    CHECK(to_job_update(view).reason == to_job_update(full_view).reason);
}

TEST_CASE("skim: a recorded Deployment List keeps what serve status reads and nothing of the pod template") {
    const auto text = fixture_text("serve-deployments-v1.20.json");
    const auto full = json::parse(text);
    auto skimmed = skim_deployment_list(text);
    REQUIRE(skimmed);
    REQUIRE(skimmed->at("items").size() == full["items"].size());
    REQUIRE_FALSE(full["items"].empty());
    for (std::size_t i = 0; i < full["items"].size(); ++i) {
        const auto& f = full["items"][i];
        const auto& s = (*skimmed)["items"][i];
        json want = keep_only(f, {"apiVersion", "kind"}); // items of a List carry neither
        want["metadata"] = keep_only(f["metadata"], {"name", "namespace", "generation", "creationTimestamp",
                                                     "deletionTimestamp"});
        want["metadata"]["labels"] = keep_only(f["metadata"]["labels"], {"tandem.dev/service"});
        want["metadata"]["annotations"] = keep_only(
            f["metadata"]["annotations"], {"tandem.dev/service-version", "tandem.dev/autoscale", "tandem.dev/endpoint"});
        want["spec"] = keep_only(f["spec"], {"replicas"});
        want["status"] = keep_only(f["status"], {"observedGeneration", "replicas", "readyReplicas", "updatedReplicas",
                                                  "availableReplicas", "conditions"});
        CHECK(s == want);
        CHECK_FALSE(s["spec"].contains("template"));
        CHECK(s["metadata"]["annotations"].contains("tandem.dev/endpoint"));
    }
    CHECK(skimmed->dump().size() * 4 < text.size());
    // Malformed text is an error, never a crash, at every length.
    for (std::size_t n = 0; n < text.size(); n += 97) {
        CHECK_FALSE(skim_deployment_list(std::string_view(text).substr(0, n)));
    }
}
