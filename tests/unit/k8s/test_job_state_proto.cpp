// The protobuf status List decoder (backends/k8s/job_state_proto.*) on hand-written bytes: it gives the
// JSON shape the skimmer gives for the same objects, applies JSON's omitempty and null rules, steps over
// unknown fields of every wire type, and refuses malformed bytes with a message instead of crashing. The
// real API server's answers are compared in tests/integration/test_k8s_protobuf.cpp.

#include <catch2/catch.hpp>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/job_state_proto.hpp"
#include "backends/k8s/job_state_skim.hpp"
#include "proto_writer.hpp"

using namespace tandem;
using namespace tandem::k8s;
using namespace tandem_test::pb;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr std::int64_t k_t0 = 1796300164; // 2026-12-03T12:16:04Z

// One failed pod of job "j-1-abc", rank 1, with what a v1.20 server writes around the kept fields.
Msg failed_pod() {
    Msg meta;
    meta.str(1, "j-1-abc-0-xyz")
        .str(2, "j-1-abc-0-")
        .str(3, "tandem-test")
        .str(5, "uid-1")
        .str(6, "351")
        .num(7, 0)
        .time(8, k_t0)
        .entry(11, "tandem.dev/job", "j-1-abc")
        .entry(11, "tandem.dev/rank", "1")
        .entry(11, "controller-uid", "c-uid")
        .entry(11, "tandem.dev/user", "alice")
        .entry(12, "batch.kubernetes.io/job-completion-index", "1")
        .entry(12, "tandem.dev/identity", "tandem:1:t=abcdef1234;u=alice")
        .entry(12, "other/annotation", "x")
        .msg(13, Msg().str(1, "Job").str(3, "j-1-abc"))
        .str(15, "")
        .msg(17, Msg().str(1, "kube-controller-manager").time(4, k_t0).msg(7, Msg().str(1, "{}")));
    Msg spec;
    spec.msg(2, Msg().str(1, "main").str(3, "/bin/bash")).str(3, "Never").num(4, 30).str(10, "cpu-node");
    Msg terminated;
    terminated.num(1, 3).num(2, 0).str(3, "Error").str(4, "").time(5, k_t0).time(6, k_t0 + 36).str(7, "cid");
    Msg status;
    status.str(1, "Failed")
        .msg(2, Msg().str(1, "PodScheduled").str(2, "True").msg(3, Msg()).time(4, k_t0).str(5, "").str(6, ""))
        .str(3, "")
        .str(4, "")
        .str(5, "127.0.0.1")
        .time(7, k_t0)
        .msg(8, Msg()
                    .str(1, "main")
                    .msg(2, Msg().msg(3, terminated))
                    .msg(3, Msg())
                    .num(4, 0)
                    .num(5, 0)
                    .str(6, "ubuntu:22.04")
                    .num(9, 0))
        .str(9, "BestEffort");
    return Msg().msg(1, meta).msg(2, spec).msg(3, status);
}

// The same pod as the API server's JSON (omitempty fields left out, the zero Time as null).
const char* const k_failed_pod_json = R"({
  "metadata": {"name": "j-1-abc-0-xyz", "generateName": "j-1-abc-0-", "namespace": "tandem-test",
    "uid": "uid-1", "resourceVersion": "351", "creationTimestamp": "2026-12-03T12:16:04Z",
    "labels": {"tandem.dev/job": "j-1-abc", "tandem.dev/rank": "1", "controller-uid": "c-uid",
      "tandem.dev/user": "alice"},
    "annotations": {"batch.kubernetes.io/job-completion-index": "1", "other/annotation": "x",
      "tandem.dev/identity": "tandem:1:t=abcdef1234;u=alice"},
    "ownerReferences": [{"kind": "Job", "name": "j-1-abc"}],
    "managedFields": [{"manager": "kube-controller-manager", "time": "2026-12-03T12:16:04Z"}]},
  "spec": {"containers": [{"name": "main", "command": ["/bin/bash"]}], "restartPolicy": "Never",
    "terminationGracePeriodSeconds": 30, "nodeName": "cpu-node"},
  "status": {"phase": "Failed",
    "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-12-03T12:16:04Z"}],
    "hostIP": "127.0.0.1", "startTime": "2026-12-03T12:16:04Z",
    "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 3, "reason": "Error",
        "startedAt": "2026-12-03T12:16:04Z", "finishedAt": "2026-12-03T12:16:40Z", "containerID": "cid"}},
      "lastState": {}, "ready": false, "restartCount": 0, "image": "ubuntu:22.04", "started": false}],
    "qosClass": "BestEffort"}})";

json decode(const std::string& body) {
    auto list = decode_status_list(body);
    INFO((list ? std::string() : list.error().message));
    REQUIRE(list);
    return *list;
}

std::string decode_error(const std::string& body) {
    auto list = decode_status_list(body);
    REQUIRE_FALSE(list);
    CHECK(list.error().kind == ErrorKind::remote);
    return list.error().message;
}

std::string pod_list(const Msg& pod) {
    return envelope("v1", "PodList", Msg().msg(1, Msg().str(2, "1148")).msg(2, pod));
}

} // namespace

TEST_CASE("proto: a PodList decodes to what the skimmer keeps of the same pods in JSON") {
    const json decoded = decode(pod_list(failed_pod()));
    json list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "1148"}}}};
    list["items"] = json::array({json::parse(k_failed_pod_json)});
    const json skimmed = *skim_status_list(list.dump());
    CHECK(decoded == skimmed);
    // What that is, spelled out: the read labels and annotation only, no empty strings, the zero Time
    // as null, 0 and false where JSON writes them.
    const json& pod = decoded["items"][0];
    CHECK(pod["metadata"]["labels"] ==
          json{{"tandem.dev/job", "j-1-abc"}, {"tandem.dev/rank", "1"}, {"tandem.dev/user", "alice"}});
    CHECK(pod["metadata"]["annotations"] == json{{"batch.kubernetes.io/job-completion-index", "1"},
                                                 {"tandem.dev/identity", "tandem:1:t=abcdef1234;u=alice"}});
    CHECK(pod["status"]["conditions"][0] == json{{"type", "PodScheduled"},
                                                 {"status", "True"},
                                                 {"lastProbeTime", nullptr},
                                                 {"lastTransitionTime", "2026-12-03T12:16:04Z"}});
    CHECK(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3);
    CHECK_FALSE(pod["status"]["containerStatuses"][0]["state"]["terminated"].contains("signal"));
    CHECK(pod["status"]["containerStatuses"][0]["ready"] == false);
    CHECK(pod["status"]["containerStatuses"][0]["lastState"] == json::object());
    CHECK_FALSE(pod["status"].contains("reason"));
    // And the state mapping reads it: rank 1 of j-1-abc failed with exit code 3.
    const auto views = group_by_tandem_job(json{{"items", json::array()}}, decoded, nullptr);
    REQUIRE(views.count("j-1-abc") == 1);
}

TEST_CASE("proto: a JobList keeps set pointers at 0 and drops omitempty zeros") {
    Msg job;
    job.msg(1, Msg().str(1, "j-2-def").entry(11, "tandem.dev/job", "j-2-def"))
        .msg(2, Msg().num(1, 0).num(2, 2).num(7, 0).str(9, "Indexed"))
        .msg(3, Msg()
                    .msg(1, Msg().str(1, "Complete").str(2, "True").time(4, k_t0 + 36))
                    .time(2, k_t0)
                    .time(3, k_t0 + 36)
                    .num(4, 0)
                    .num(5, 2)
                    .num(6, 0));
    const json list = decode(envelope("batch/v1", "JobList", Msg().msg(2, job)));
    CHECK(list["kind"] == "JobList");
    CHECK(list["apiVersion"] == "batch/v1");
    const json& item = list["items"][0];
    CHECK(item["spec"] == json{{"parallelism", 0}, {"completions", 2}, {"completionMode", "Indexed"}});
    CHECK(item["status"]["succeeded"] == 2);
    CHECK_FALSE(item["status"].contains("active"));
    CHECK_FALSE(item["status"].contains("failed"));
    CHECK(item["status"]["completionTime"] == "2026-12-03T12:16:40Z");
    CHECK(item["status"]["conditions"][0]["type"] == "Complete");
}

TEST_CASE("proto: numbers and times at their edges") {
    // int32 -1 travels as a ten-byte varint.
    Msg terminated;
    terminated.num(1, static_cast<std::uint64_t>(std::int64_t{-1}));
    Msg status;
    status.msg(8, Msg().str(1, "main").msg(2, Msg().msg(3, terminated)));
    const json pod = decode(pod_list(Msg().msg(3, status)))["items"][0];
    CHECK(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == -1);

    auto created = [](std::int64_t seconds) {
        return decode(
            pod_list(Msg().msg(1, Msg().time(8, seconds))))["items"][0]["metadata"]["creationTimestamp"];
    };
    CHECK(created(951782400) == "2000-02-29T00:00:00Z");
    CHECK(created(253402300799) == "9999-12-31T23:59:59Z");
    CHECK(created(-62135596800) == "0001-01-01T00:00:00Z");
    CHECK(created(0) == "1970-01-01T00:00:00Z"); // written out: only the empty message is the zero Time
    CHECK_THAT(decode_error(pod_list(Msg().msg(1, Msg().time(8, 253402300800)))), Contains("out of range"));
    // No items at all is an empty list, as in JSON.
    CHECK(decode(envelope("v1", "PodList", Msg()))["items"] == json::array());
}

TEST_CASE("proto: unknown fields of every wire type are stepped over, a repeated field appends") {
    Msg pod;
    pod.fixed32(20).fixed64(21).num(22, 12345).str(23, "junk").msg(1, Msg().fixed64(40).str(1, "p"));
    pod.msg(3, Msg().msg(2, Msg().str(1, "A")).msg(2, Msg().str(1, "B")).str(1, "Running").str(1, "Failed"));
    const json item = decode(pod_list(pod))["items"][0];
    CHECK(item["metadata"] == json{{"name", "p"}});
    CHECK(item["status"]["conditions"].size() == 2);
    CHECK(item["status"]["phase"] == "Failed"); // the last one wins
}

TEST_CASE("proto: malformed bytes are one-line errors with the byte where they went wrong") {
    CHECK_THAT(decode_error("{\"kind\":\"PodList\"}"), Contains("no protobuf envelope"));
    CHECK_THAT(decode_error(""), Contains("no protobuf envelope"));
    CHECK_THAT(decode_error(envelope("v1", "ServiceList", Msg())), Contains("kind 'ServiceList'"));
    CHECK_THAT(decode_error(envelope("v1", "PodList", Msg(), "gzip")), Contains("content encoding 'gzip'"));
    CHECK_THAT(decode_error(std::string("k8s\0", 4) + "\x0a\x80"), Contains("truncated varint"));
    CHECK_THAT(decode_error(std::string("k8s\0", 4) + "\x0a\x7f"), Contains("runs past the end"));
    CHECK_THAT(decode_error(pod_list(Msg().msg(1, Msg().num(1, 5)))),
               Contains("field 'name' has wire type 0"));
    CHECK_THAT(decode_error(pod_list(Msg().msg(1, Msg().str(1, "bad\xc3(")))),
               Contains("invalid UTF-8 in 'name'"));
    Msg group;
    group.bytes = varint((30 << 3) | 3);
    CHECK_THAT(decode_error(pod_list(group)), Contains("unsupported wire type 3"));
    Msg long_varint;
    long_varint.bytes = varint(30 << 3) + std::string(11, '\xff');
    CHECK_THAT(decode_error(pod_list(long_varint)), Contains("longer than 10 bytes"));
    CHECK_THAT(decode_error(pod_list(Msg().str(0, "x"))), Contains("bad field number"));
    CHECK_THAT(decode_error(pod_list(Msg().msg(1, Msg().str(8, "not a time")))), Contains("at byte"));
}

TEST_CASE("proto: every cut of a valid answer decodes or fails cleanly") {
    const std::string body = pod_list(failed_pod());
    for (std::size_t n = 0; n < body.size(); ++n) {
        auto list = decode_status_list(std::string_view(body).substr(0, n));
        if (!list) {
            CHECK(list.error().message.find('\n') == std::string::npos);
        }
    }
}

TEST_CASE("proto: an error Status decodes to the JSON Status KubeApi reads") {
    Msg status;
    status.msg(1, Msg())
        .str(2, "Failure")
        .str(3, "pods is forbidden: User \"x\"")
        .str(4, "Forbidden")
        .num(6, 403);
    auto s = decode_status_object(envelope("v1", "Status", status));
    REQUIRE(s);
    CHECK(*s == json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"status", "Failure"},
                     {"message", "pods is forbidden: User \"x\""},
                     {"reason", "Forbidden"},
                     {"code", 403}});
    CHECK_FALSE(decode_status_object(envelope("v1", "PodList", Msg())));
}
