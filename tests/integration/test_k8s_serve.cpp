// `tandem serve` against the real control plane (scripts/testbed/k8s): the real Deployment, ReplicaSet,
// endpoints and HPA controllers act on what tandem creates; the node agent runs every replica in a network
// namespace of its own and runs its probes as a kubelet does; the custom metrics API (an aggregated API the
// agent serves) gives the HPA per-pod values the test sets. Everything as the namespace-only user.

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "k8s_testbed.hpp"

using namespace tandem_test;

namespace {

// A replica: answers GET / with "<VERSION> <pod name>", GET /ready with 200 once $GATE exists (503
// before; no GATE: at once), POST /ready with 200 when the body is {"ping": 1} and the header X-Probe is
// "yes". Waits $DELAY seconds before it listens.
const std::string k_server = R"(run: |
  sleep "${DELAY:-0}"
  exec python3 -c '
  import http.server, json, os
  class H(http.server.BaseHTTPRequestHandler):
      def reply(self, ok, body):
          self.send_response(200 if ok else 503)
          self.send_header("Content-Length", str(len(body)))
          self.end_headers()
          self.wfile.write(body)
      def do_GET(self):
          gate = os.environ.get("GATE", "")
          ok = self.path != "/ready" or not gate or os.path.exists(gate)
          self.reply(ok, (os.environ["VERSION"] + " " + os.environ["TANDEM_POD_NAME"] + "\n").encode())
      def do_POST(self):
          data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
          try:
              ok = json.loads(data) == {"ping": 1} and self.headers.get("X-Probe") == "yes"
          except ValueError:
              ok = False
          self.reply(ok, b"pong\n" if ok else b"bad\n")
      def log_message(self, fmt, *args):
          print(self.command, self.path, flush=True)
  http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()'
)";

// Sets `metric` for every pod of the test namespace in the custom metrics API's values file (under a lock:
// other tests write their own metrics into the same file).
void set_metric(const std::string& metric, double value) {
    auto r = run({"/usr/bin/python3", "-c", R"(
import fcntl, json, os, sys
path, ns, metric, value = sys.argv[1:]
with open(path + ".lock", "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        data = {}
    data.setdefault(ns, {})[metric] = {"*": float(value)}
    with open(path + ".tmp", "w") as out:
        json.dump(data, out)
    os.replace(path + ".tmp", path)
)",
                  k8s_setting("K8S_CUSTOM_METRICS_FILE"), k8s_setting("K8S_NAMESPACE"), metric, std::to_string(value)});
    REQUIRE(r.exit_code == 0);
}

struct ServeHome {
    std::string metric = unique_name("qps");
    K8sHome lab{k8s_setting("K8S_KUBECONFIG_CERT"), "", "    serve_qps_metric: " + metric + "\n"};
    std::vector<std::string> names;

    ~ServeHome() {
        for (const auto& n : names) {
            lab.tandem({"serve", "down", n});
        }
    }
    std::string up(const std::string& name, const std::string& yaml, const std::vector<std::string>& extra = {}) {
        names.push_back(name);
        auto file = lab.task(name, yaml);
        std::vector<std::string> args{"serve", "up", file};
        args.insert(args.end(), extra.begin(), extra.end());
        auto r = lab.tandem(args, 180s);
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return file;
    }
    nlohmann::json status(const std::string& name) const {
        auto r = lab.tandem({"serve", "status", name, "--json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return nlohmann::json::parse(r.out);
    }
    // Polls `serve status NAME --json` until `done` holds or `limit` passes; the last view.
    template <typename Pred>
    nlohmann::json wait_for(const std::string& name, Pred done, std::chrono::milliseconds limit = 90s) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        nlohmann::json s;
        do {
            s = status(name);
            if (done(s)) {
                return s;
            }
            std::this_thread::sleep_for(500ms);
        } while (std::chrono::steady_clock::now() < deadline);
        return s;
    }
};

std::string curl(const std::string& url) {
    auto r = run({"/usr/bin/curl", "-s", "--max-time", "5", url});
    return r.exit_code == 0 ? r.out : "curl failed: " + r.err;
}

// The ready and not-ready addresses of the Service's Endpoints, as the real endpoints controller wrote them.
std::pair<std::set<std::string>, std::set<std::string>> endpoints_of(const std::string& name) {
    auto r = kubectl({"get", "endpoints", name, "-o", "json"});
    std::set<std::string> ready, not_ready;
    if (r.exit_code != 0) {
        return {ready, not_ready};
    }
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    for (const auto& subset : j.value("subsets", nlohmann::json::array())) {
        for (const auto& a : subset.value("addresses", nlohmann::json::array())) {
            ready.insert(a.value("ip", ""));
        }
        for (const auto& a : subset.value("notReadyAddresses", nlohmann::json::array())) {
            not_ready.insert(a.value("ip", ""));
        }
    }
    return {ready, not_ready};
}

std::set<std::string> addresses(const nlohmann::json& status) {
    std::set<std::string> out;
    for (const auto& r : status.value("replicas", nlohmann::json::array())) {
        out.insert(r.value("address", ""));
    }
    return out;
}

std::vector<std::string> left_of(const std::string& name) {
    auto r = kubectl({"get", "deployments,replicasets,pods,services,horizontalpodautoscalers,secrets", "-l",
                      "tandem.dev/service=" + name, "-o", "name"});
    std::vector<std::string> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty()) {
            out.push_back(line);
        }
    }
    return out;
}

} // namespace

TEST_CASE("k8s serve: two replicas become ready only after their probe passes and fill the Service's Endpoints "
          "and the HPA scales them up to max_replicas and back down after the delay and down leaves nothing") {
    ServeHome s;
    const auto name = unique_name("web");
    const std::string gate = s.lab.home.path("gate-" + name);
    set_metric(s.metric, 1);
    s.up(name, "name: " + name +
                   "\nservice:\n  readiness_probe:\n    path: /ready\n    initial_delay_seconds: 300\n"
                   "  replica_policy:\n    min_replicas: 2\n    max_replicas: 3\n    target_qps_per_replica: 5\n"
                   "    upscale_delay_seconds: 0\n    downscale_delay_seconds: 8\n  ports: 8080\n"
                   "resources:\n  infra: k8s\n  cpus: 0.1\nenvs:\n  VERSION: v1\n  GATE: " + gate + "\n" + k_server);
    // Running but not ready: the probe answers 503 until the gate opens. (The very first probe may find
    // the server not listening yet, "connection refused"; the next one, 5 s later, gets the 503.)
    auto started = s.wait_for(name, [](const nlohmann::json& j) {
        const auto reps = j.value("replicas", nlohmann::json::array());
        return reps.size() == 2 &&
               std::all_of(reps.begin(), reps.end(),
                           [](const nlohmann::json& r) { return r.value("state", "") == "NOT_READY"; }) &&
               contains(j.value("reason", ""), "statuscode: 503");
    });
    INFO(started.dump(2));
    REQUIRE(started["replicas"].size() == 2);
    CHECK(started["ready"] == 0);
    CHECK(started["status"] == "NOT_READY");
    CHECK(contains(started["reason"].get<std::string>(), "Readiness probe failed: HTTP probe failed with statuscode: 503"));
    CHECK(endpoints_of(name).first.empty());
    CHECK(endpoints_of(name).second == addresses(started));
    std::ofstream(gate) << "open\n";
    auto ready = s.wait_for(name, [](const nlohmann::json& j) { return j.value("status", "") == "READY"; });
    INFO(ready.dump(2));
    REQUIRE(ready["status"] == "READY");
    CHECK(ready["ready"] == 2);
    CHECK(ready["min_replicas"] == 2);
    CHECK(ready["max_replicas"] == 3);
    CHECK(contains(ready["endpoint"].get<std::string>(), ":8080"));
    // Both answer on their own pod addresses, which are the Service's ready endpoints.
    const auto ips = addresses(ready);
    REQUIRE(ips.size() == 2);
    for (const auto& r : ready["replicas"]) {
        CHECK(r["address"].get<std::string>().rfind("10.244.0.", 0) == 0);
        CHECK(curl("http://" + r["address"].get<std::string>() + ":8080/") ==
              "v1 " + r["pod"].get<std::string>() + "\n");
    }
    CHECK(endpoints_of(name).first == ips);

    // Load: 20 requests/s per pod against a target of 5: the real HPA scales to max_replicas (3).
    set_metric(s.metric, 20);
    auto up = s.wait_for(name, [](const nlohmann::json& j) { return j.value("desired", 0) == 3 && j.value("ready", 0) == 3; });
    INFO(up.dump(2));
    CHECK(up["desired"] == 3);
    CHECK(up["ready"] == 3);
    CHECK(endpoints_of(name).first.size() == 3);
    // Quiet: back to min_replicas, but only after the 8 s scale-down window. The window runs from the
    // HPA's last recommendation of 3, made at its last 3 s sync before the metric was lowered: the drop
    // comes 5 to 9 s after lowering it (without the window it would come within one sync, 3 s).
    set_metric(s.metric, 1);
    const auto lowered = std::chrono::steady_clock::now();
    auto down = s.wait_for(name, [](const nlohmann::json& j) { return j.value("desired", 0) == 2; });
    const auto took = std::chrono::steady_clock::now() - lowered;
    INFO(down.dump(2));
    CHECK(down["desired"] == 2);
    CHECK(took >= 5s);

    // tandem status lists the service beside the jobs.
    auto st = s.lab.tandem({"status", "--json"});
    auto listed = nlohmann::json::parse(st.out);
    REQUIRE(listed.contains("services"));
    CHECK(listed["services"][0]["name"] == name);
    CHECK(contains(s.lab.tandem({"status"}).out, name));

    auto removed = s.lab.tandem({"serve", "down", name}, 180s);
    INFO(removed);
    CHECK(removed.exit_code == 0);
    CHECK(left_of(name).empty());
    CHECK(s.lab.tandem({"serve", "status", name}).exit_code == 3);
    CHECK(s.lab.tandem({"serve", "down", name}).exit_code == 3);
}

TEST_CASE("k8s serve: serve update rolls to a new version with never fewer ready replicas than before") {
    ServeHome s;
    const auto name = unique_name("roll");
    const std::string body = "\nservice:\n  readiness_probe: /ready\n  replicas: 2\n  ports: 8080\n"
                             "resources:\n  infra: k8s\n  cpus: 0.1\n";
    s.up(name, "name: " + name + body + "envs:\n  VERSION: v1\n" + k_server, {"--wait", "--timeout", "120"});
    REQUIRE(s.status(name)["ready"] == 2);
    // Watch the Endpoints (what the Service's traffic sees) and serve status throughout the roll.
    std::atomic<bool> stop{false};
    std::atomic<std::size_t> fewest{99};
    std::atomic<int> polls{0};
    std::thread watcher([&] {
        while (!stop) {
            const auto n = endpoints_of(name).first.size();
            if (n < fewest) {
                fewest = n;
            }
            ++polls;
            std::this_thread::sleep_for(100ms);
        }
    });
    // v2 takes 3 s before it listens, so the roll is slow enough to be seen.
    auto file2 = s.lab.task(name + "-v2", "name: " + name + body + "envs:\n  VERSION: v2\n  DELAY: \"3\"\n" + k_server);
    auto updated = s.lab.tandem({"serve", "update", name, file2});
    INFO(updated);
    REQUIRE(updated.exit_code == 0);
    CHECK(updated.out == name + " version 2\n");
    bool both_versions = false;
    auto done = s.wait_for(name, [&](const nlohmann::json& j) {
        std::set<int> versions;
        for (const auto& r : j.value("replicas", nlohmann::json::array())) {
            versions.insert(r.value("version", 0));
        }
        if (versions.count(1) && versions.count(2)) {
            both_versions = both_versions || (j.value("status", "") == "UPDATING" &&
                                              j.value("old_versions", nlohmann::json::array()) == nlohmann::json{1});
        }
        return j.value("status", "") == "READY" && j.value("version", 0) == 2 && versions == std::set<int>{2};
    }, 120s);
    stop = true;
    watcher.join();
    INFO(done.dump(2));
    CHECK(done["status"] == "READY");
    CHECK(both_versions);
    CHECK(polls > 10);
    CHECK(fewest >= 2);
    for (const auto& r : done["replicas"]) {
        CHECK(curl("http://" + r["address"].get<std::string>() + ":8080/").rfind("v2 ", 0) == 0);
    }
    auto table = s.lab.tandem({"serve", "status", name});
    CHECK(contains(table.out, "READY"));
    auto logs = s.lab.tandem({"serve", "logs", name});
    CHECK(contains(logs.out, "[replica 1] GET /ready"));
    CHECK(contains(logs.out, "[replica 2] GET /ready"));
}

TEST_CASE("k8s serve: a probe that never passes is the service's reason and a POST probe runs in the replica") {
    ServeHome s;
    const auto bad = unique_name("never");
    s.names.push_back(bad);
    auto file = s.lab.task(bad, "name: " + bad +
                                    "\nservice:\n  readiness_probe:\n    path: /ready\n    timeout_seconds: 2\n"
                                    "  ports: 8080\nresources:\n  infra: k8s\n  cpus: 0.1\nenvs:\n  VERSION: v1\n"
                                    "  GATE: /nonexistent/gate\n" + k_server);
    auto r = s.lab.tandem({"serve", "up", file, "--wait", "--timeout", "20"});
    INFO(r);
    CHECK(r.exit_code == 5);
    CHECK(contains(r.err, "was not ready after 20 s: NOT_READY"));
    CHECK(contains(r.err, "Readiness probe failed: HTTP probe failed with statuscode: 503"));
    auto st = s.status(bad);
    CHECK(st["status"] == "NOT_READY");
    CHECK(st["replicas"][0]["state"] == "NOT_READY");
    auto table = s.lab.tandem({"serve", "status", bad});
    CHECK(contains(table.out, "Readiness probe failed"));

    const auto post = unique_name("post");
    s.up(post, "name: " + post +
                   "\nservice:\n  readiness_probe:\n    path: /ready\n    post_data: {\"ping\": 1}\n"
                   "    headers:\n      X-Probe: \"yes\"\n  ports: 8080\n"
                   "resources:\n  infra: k8s\n  cpus: 0.1\nenvs:\n  VERSION: v1\n" + k_server,
         {"--wait", "--timeout", "60"});
    auto ok = s.status(post);
    CHECK(ok["status"] == "READY");
    auto logs = s.lab.tandem({"serve", "logs", post});
    CHECK(contains(logs.out, "[replica 1] POST /ready"));
}

TEST_CASE("k8s serve: plan prints the objects and says when the cluster serves no such metric") {
    ServeHome s;
    const auto name = unique_name("plan");
    auto file = s.lab.task(name, "name: " + name +
                                     "\nservice:\n  readiness_probe: /\n  replica_policy:\n    min_replicas: 1\n"
                                     "    max_replicas: 4\n    target_qps_per_replica: 2.5\n  ports: 8080\n"
                                     "resources:\n  infra: k8s\n  cpus: 0.1\nenvs:\n  VERSION: v1\n" + k_server);
    auto without = s.lab.tandem({"plan", file});
    INFO(without);
    CHECK(without.exit_code == 0);
    CHECK(contains(without.out, "kind: \"Deployment\""));
    CHECK(contains(without.out, "kind: \"Service\""));
    CHECK_FALSE(contains(without.out, "HorizontalPodAutoscaler"));
    CHECK(contains(without.out, "serves no custom metric pods/" + s.metric));
    set_metric(s.metric, 0);
    auto with = s.lab.tandem({"plan", file});
    CHECK(contains(with.out, "kind: \"HorizontalPodAutoscaler\""));
    CHECK(contains(with.out, k8s_minor() >= 23 ? "apiVersion: \"autoscaling/v2\"" : "apiVersion: \"autoscaling/v2beta2\""));
    CHECK(contains(with.out, "averageValue: \"2500m\""));
    auto launched = s.lab.tandem({"launch", "-d", file});
    CHECK(launched.exit_code == 2);
    CHECK(contains(launched.err, "it is a service, not a job"));
    CHECK(contains(launched.err, "tandem serve up"));
}

TEST_CASE("k8s serve: examples/serve-vllm.yaml runs on the testbed with its stand-in model server") {
    ServeHome s;
    const auto name = unique_name("vllm");
    set_metric(s.metric, 0);
    s.names.push_back(name);
    auto r = s.lab.tandem({"serve", "up", std::string(TANDEM_EXAMPLES) + "/serve-vllm.yaml", "-n", name, "--wait",
                           "--timeout", "120"},
                          180s);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto st = s.status(name);
    REQUIRE_FALSE(st["replicas"].empty());
    const auto ip = st["replicas"][0]["address"].get<std::string>();
    CHECK(contains(curl("http://" + ip + ":8000/v1/models"), "\"object\""));
    CHECK(st["max_replicas"].is_number());
}
