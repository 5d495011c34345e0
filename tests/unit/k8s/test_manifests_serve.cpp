// The native objects of a service (serve_manifests.hpp): the Deployment with its probes, the Service, the
// HorizontalPodAutoscaler, the Secret, the refusals, and the POST readiness probe's exec command run for
// real (after the kubelet's own $(VAR) expansion) against a small HTTP server on 127.0.0.1.

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <poll.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "backends/k8s/serve_manifests.hpp"
#include "core/spec_loader.hpp"
#include "sys/files.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

TaskSpec load_task(const std::string& yaml) {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    options.base_dir = "/tmp";
    options.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    auto r = load_spec(yaml, "serve.yaml", {}, options);
    INFO(format_diagnostics(r.diagnostics));
    REQUIRE(r.spec);
    return *r.spec;
}

ServePlan serve_plan(const std::string& name = "llm") {
    ServePlan p;
    p.name = name;
    p.version = 3;
    p.pod.tandem_id = 7;
    p.pod.base_name = name;
    p.pod.submit_token = "tok12";
    p.pod.namespace_name = "ml";
    p.pod.image = "ubuntu:22.04";
    return p;
}

ServeManifests render_ok(const TaskSpec& spec, const ServePlan& plan, bool mask = false) {
    auto m = render_serve_manifests(spec, plan, mask);
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m);
    return *m;
}

// The refusal's message; fails the test unless it is an invalid_spec refusal.
std::string refusal(const TaskSpec& spec, const ServePlan& plan) {
    auto m = render_serve_manifests(spec, plan, false);
    REQUIRE_FALSE(m);
    CHECK(m.error().kind == ErrorKind::invalid_spec);
    return m.error().message;
}

const json& pod_spec(const ServeManifests& m) {
    return m.deployment["spec"]["template"]["spec"];
}

const json& main_container(const ServeManifests& m) {
    return pod_spec(m)["containers"][0];
}

// The position of `name` in the container's env list, or -1.
int env_index(const json& container, const std::string& name) {
    int i = 0;
    for (const auto& e : container["env"]) {
        if (e.value("name", "") == name) {
            return i;
        }
        ++i;
    }
    return -1;
}

json env_entry(const json& container, const std::string& name) {
    const int i = env_index(container, name);
    REQUIRE(i >= 0);
    return container["env"][static_cast<std::size_t>(i)];
}

bool has_item(const json& list, const std::string& text) {
    for (const auto& item : list) {
        if (item.is_string() && item.get<std::string>() == text) {
            return true;
        }
    }
    return false;
}

bool contains(const std::string& text, const std::string& needle) {
    return text.find(needle) != std::string::npos;
}

bool any_note_contains(const ServeManifests& m, const std::string& needle) {
    for (const auto& n : m.notes) {
        if (contains(n, needle)) {
            return true;
        }
    }
    return false;
}

// ---- the POST probe run for real ---------------------------------------------------------------------

// The kubelet's expansion of an exec probe's command (ExpandContainerCommandOnlyStatic): $$ -> $,
// $(NAME) -> NAME's value when the container defines NAME with a literal value, anything else as written.
std::string kubelet_expand(const std::string& in, const std::map<std::string, std::string>& vars) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '$' || i + 1 >= in.size()) {
            out += in[i];
        } else if (in[i + 1] == '$') {
            out += '$';
            ++i;
        } else if (in[i + 1] == '(') {
            const auto close = in.find(')', i + 2);
            if (close == std::string::npos) {
                out += in[i];
                continue;
            }
            const auto name = in.substr(i + 2, close - i - 2);
            if (auto it = vars.find(name); it != vars.end()) {
                out += it->second;
            } else {
                out += in.substr(i, close - i + 1);
            }
            i = close;
        } else {
            out += in[i];
        }
    }
    return out;
}

std::vector<std::string> probe_argv(const json& container, const char* probe) {
    std::map<std::string, std::string> vars;
    for (const auto& e : container["env"]) {
        if (e.contains("value")) {
            vars[e["name"].get<std::string>()] = e["value"].get<std::string>();
        }
    }
    std::vector<std::string> argv;
    for (const auto& a : container[probe]["exec"]["command"]) {
        argv.push_back(kubelet_expand(a.get<std::string>(), vars));
    }
    return argv;
}

// Waits for `pid` at most `limit`; kills it (SIGKILL) when it is still running then. The wait status,
// or -1 when it had to be killed.
int wait_bounded(pid_t pid, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            return status;
        }
        if (r < 0) {
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

std::string python_path() {
    for (const char* p : {"/usr/bin/python3", "/bin/python3"}) {
        if (access(p, X_OK) == 0) {
            return p;
        }
    }
    return "python3";
}

// Answers 200 only to a POST of `path` whose body is JSON equal to `body`, with Content-Type
// application/json and the header `name: value`; 500 to anything else. Prints its port first.
constexpr const char* k_server_program = R"py(import http.server, json, sys
path, body, name, value = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_POST(self):
        try:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            ok = (self.path == path and json.loads(data) == json.loads(body)
                  and self.headers.get(name) == value
                  and self.headers.get("Content-Type") == "application/json")
        except Exception:
            ok = False
        self.answer(200 if ok else 500)
    def do_GET(self):
        self.answer(500)
    def log_message(self, *args):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
)py";

class ProbeServer {
public:
    ProbeServer(const std::string& path, const std::string& body, const std::string& name,
                const std::string& value) {
        int fds[2];
        REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
        const std::string python = python_path();
        m_pid = fork();
        REQUIRE(m_pid >= 0);
        if (m_pid == 0) {
            dup2(fds[1], 1);
            const int null = open("/dev/null", O_WRONLY);
            if (null >= 0) {
                dup2(null, 2);
            }
            std::vector<std::string> args{python, "-c", k_server_program, path, body, name, value};
            std::vector<char*> argv;
            for (auto& a : args) {
                argv.push_back(a.data());
            }
            argv.push_back(nullptr);
            execvp(argv[0], argv.data());
            _exit(127);
        }
        close(fds[1]);
        std::string line;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
        while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
            pollfd p{fds[0], POLLIN, 0};
            if (poll(&p, 1, 200) > 0) {
                char buf[64];
                const ssize_t n = read(fds[0], buf, sizeof buf);
                if (n <= 0) {
                    break;
                }
                line.append(buf, static_cast<std::size_t>(n));
            }
        }
        close(fds[0]);
        m_port = std::atoi(line.c_str());
        if (m_port <= 0) { // the destructor does not run when the constructor fails
            kill(m_pid, SIGTERM);
            wait_bounded(m_pid, std::chrono::seconds(5));
            m_pid = -1;
            FAIL("the probe server did not start: " << line);
        }
    }
    ~ProbeServer() {
        if (m_pid > 0) {
            kill(m_pid, SIGTERM);
            wait_bounded(m_pid, std::chrono::seconds(5)); // SIGKILL after 5 s
        }
    }
    ProbeServer(const ProbeServer&) = delete;
    ProbeServer& operator=(const ProbeServer&) = delete;
    int port() const { return m_port; }

private:
    pid_t m_pid = -1;
    int m_port = 0;
};

struct RunResult {
    int exit_code = -1; // -1: killed at the time limit, or ended by a signal
    std::string output; // stdout and stderr
};

// Runs argv (argv[0] an absolute path) with only PATH=`path` in its environment, for at most 30 s.
RunResult run_probe(const std::vector<std::string>& argv_in, const std::string& path) {
    char out_template[] = "/tmp/tandem-serve-probe-XXXXXX";
    const int fd = mkstemp(out_template);
    REQUIRE(fd >= 0);
    std::vector<std::string> args = argv_in;
    std::vector<std::string> env_strings{"PATH=" + path};
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) {
            dup2(null, 0);
        }
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        std::vector<char*> envp;
        for (auto& e : env_strings) {
            envp.push_back(e.data());
        }
        envp.push_back(nullptr);
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    const int status = wait_bounded(pid, std::chrono::seconds(30));
    close(fd);
    RunResult r;
    if (status != -1 && WIFEXITED(status)) {
        r.exit_code = WEXITSTATUS(status);
    }
    std::ifstream in(out_template);
    r.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::remove(out_template);
    return r;
}

// A folder for PATH holding only `tool` (a link to the real one), so the probe script takes that branch.
class ToolDir {
public:
    explicit ToolDir(const std::string& tool, const std::string& target) {
        char dir_template[] = "/tmp/tandem-serve-path-XXXXXX";
        REQUIRE(mkdtemp(dir_template) != nullptr);
        m_dir = dir_template;
        if (!tool.empty()) {
            std::filesystem::create_symlink(target, m_dir / tool);
        }
    }
    ~ToolDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
    }
    ToolDir(const ToolDir&) = delete;
    ToolDir& operator=(const ToolDir&) = delete;
    std::string path() const { return m_dir.string(); }

private:
    std::filesystem::path m_dir;
};

std::string post_probe_yaml(int port, const std::string& post_data, const std::string& auth) {
    return fmt::format(R"(name: llm
service:
  readiness_probe:
    path: /v1/ready
    initial_delay_seconds: 30
    timeout_seconds: 5
    post_data: {}
    headers:
      Authorization: {}
  replicas: 1
  ports: {}
run: python3 serve.py
)",
                       post_data, auth, port);
}

} // namespace

TEST_CASE("k8s serve: a GET probe makes a Deployment of service replicas with httpGet probes", "[serve]") {
    auto spec = load_task(R"(name: llm
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 45
    timeout_seconds: 7
    headers:
      X-Probe: tandem
      Authorization: Bearer abc
  replicas: 2
  ports: 8080
run: python3 -m http.server 8080
)");
    REQUIRE(spec.service);
    auto m = render_ok(spec, serve_plan());
    const auto& d = m.deployment;
    CHECK(d["apiVersion"] == "apps/v1");
    CHECK(d["kind"] == "Deployment");
    CHECK(d["metadata"]["name"] == "llm");
    CHECK(d["metadata"]["namespace"] == "ml");
    CHECK(d["metadata"]["labels"]["tandem.dev/service"] == "llm");
    CHECK(d["metadata"]["annotations"]["tandem.dev/service-version"] == "3");
    CHECK(d["spec"]["replicas"] == 2);
    CHECK(d["spec"]["selector"]["matchLabels"] == json{{"tandem.dev/service", "llm"}});
    CHECK(d["spec"]["strategy"]["type"] == "RollingUpdate");
    CHECK(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0);
    CHECK(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 1);

    const auto& labels = d["spec"]["template"]["metadata"]["labels"];
    CHECK(labels["tandem.dev/service"] == "llm");
    CHECK(labels["tandem.dev/service-version"] == "3");
    CHECK_FALSE(labels.contains("tandem.dev/job"));
    CHECK_FALSE(labels.contains("tandem.dev/submit-token"));
    CHECK_FALSE(labels.contains("tandem.dev/id"));
    CHECK_FALSE(labels.contains("tandem.dev/rank"));
    for (const auto& [k, v] : d["spec"]["selector"]["matchLabels"].items()) { // the selector picks its pods
        CHECK(labels[k] == v);
    }

    CHECK(pod_spec(m)["restartPolicy"] == "Always");
    const auto& c = main_container(m);
    bool named = false;
    for (const auto& p : c["ports"]) {
        if (p.value("containerPort", 0) == 8080) {
            CHECK(p["name"] == "http");
            named = true;
        }
    }
    CHECK(named);

    const auto& ready = c["readinessProbe"];
    CHECK(ready["httpGet"]["path"] == "/health");
    CHECK(ready["httpGet"]["port"] == 8080);
    CHECK(ready["httpGet"]["httpHeaders"] ==
          json::array({{{"name", "X-Probe"}, {"value", "tandem"}},
                       {{"name", "Authorization"}, {"value", "Bearer abc"}}}));
    CHECK_FALSE(ready.contains("exec"));
    CHECK(ready["periodSeconds"] == 5);
    CHECK(ready["timeoutSeconds"] == 7);
    const auto& live = c["livenessProbe"];
    CHECK(live["httpGet"] == ready["httpGet"]);
    CHECK(live["initialDelaySeconds"] == 45);
    CHECK(live["timeoutSeconds"] == 7);

    CHECK(env_entry(c, "TANDEM_SERVICE_NAME")["value"] == "llm");
    CHECK(env_entry(c, "TANDEM_SERVICE_VERSION")["value"] == "3");
    CHECK_FALSE(m.secret);
    CHECK_FALSE(m.hpa);
    CHECK(m.notes.empty());
}

TEST_CASE("k8s serve: a probe without headers has no httpHeaders and a port declared once", "[serve]") {
    auto spec = load_task("name: web\nresources:\n  ports: 9000\nservice:\n  readiness_probe: /\nrun: x\n");
    auto m = render_ok(spec, serve_plan("web"));
    const auto& c = main_container(m);
    CHECK_FALSE(c["readinessProbe"]["httpGet"].contains("httpHeaders"));
    CHECK(c["readinessProbe"]["httpGet"]["port"] == 9000);
    int declared = 0;
    for (const auto& p : c["ports"]) {
        declared += p.value("containerPort", 0) == 9000 ? 1 : 0;
    }
    CHECK(declared == 1);
    CHECK(m.service["spec"]["ports"][0]["port"] == 9000);
}

TEST_CASE(
    "k8s serve: a POST probe is an exec probe with the URL and body and timeout and headers as arguments",
    "[serve]") {
    auto spec = load_task(post_probe_yaml(8081, "{prompt: ping, max_tokens: 1}", "Bearer tok 123"));
    auto m = render_ok(spec, serve_plan());
    const auto& c = main_container(m);
    const auto& ready = c["readinessProbe"];
    CHECK_FALSE(ready.contains("httpGet"));
    const auto& cmd = ready["exec"]["command"];
    REQUIRE(cmd.is_array());
    REQUIRE(cmd.size() >= 3);
    CHECK(cmd[0] == "/bin/sh");
    CHECK(cmd[1] == "-c");
    CHECK(has_item(cmd, "http://127.0.0.1:8081/v1/ready"));
    CHECK(has_item(cmd, json{{"prompt", "ping"}, {"max_tokens", 1}}.dump()));
    CHECK(has_item(cmd, "5"));
    CHECK(has_item(cmd, "Authorization: Bearer tok 123")); // one argument, spaces and all
    CHECK(ready["timeoutSeconds"] == 5);
    CHECK(ready["periodSeconds"] == 5);
    CHECK(c["livenessProbe"]["exec"]["command"] == cmd);
    CHECK(c["livenessProbe"]["initialDelaySeconds"] == 30);
}

TEST_CASE("k8s serve: the POST exec probe run for real answers 0 only when the server accepts", "[serve]") {
    const std::string body = R"({"prompt":"ping","max_tokens":1})";
    ProbeServer server("/v1/ready", body, "Authorization", "Bearer tok 123");
    const int port = server.port();
    auto argv_for = [&](const std::string& post_data, const std::string& auth) {
        auto m = render_ok(load_task(post_probe_yaml(port, post_data, auth)), serve_plan());
        const auto& c = main_container(m);
        auto argv = probe_argv(c, "readinessProbe");
        REQUIRE(argv.size() > 4);
        CHECK(argv == probe_argv(c, "livenessProbe"));
        return argv;
    };
    const auto good = argv_for("{prompt: ping, max_tokens: 1}", "Bearer tok 123");
    const auto wrong_body = argv_for("{prompt: pong, max_tokens: 1}", "Bearer tok 123");
    const auto wrong_header = argv_for("{prompt: ping, max_tokens: 1}", "Bearer other");
    // The same body written as a string of JSON.
    const auto string_body = argv_for("'{\"max_tokens\": 1, \"prompt\": \"ping\"}'", "Bearer tok 123");

    SECTION("with curl") {
        auto ok = run_probe(good, "/usr/bin:/bin");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        auto ok2 = run_probe(string_body, "/usr/bin:/bin");
        INFO(ok2.output);
        CHECK(ok2.exit_code == 0);
        auto bad = run_probe(wrong_body, "/usr/bin:/bin");
        INFO(bad.output);
        CHECK(bad.exit_code > 0);
        auto bad_header = run_probe(wrong_header, "/usr/bin:/bin");
        INFO(bad_header.output);
        CHECK(bad_header.exit_code > 0);
    }
    SECTION("with python3 alone in the image") {
        ToolDir dir("python3", python_path());
        auto ok = run_probe(good, dir.path());
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        auto bad = run_probe(wrong_body, dir.path());
        INFO(bad.output);
        CHECK(bad.exit_code > 0);
        auto bad_header = run_probe(wrong_header, dir.path());
        INFO(bad_header.output);
        CHECK(bad_header.exit_code > 0);
    }
    SECTION("with wget alone in the image") {
        if (access("/usr/bin/wget", X_OK) != 0) {
            WARN("no /usr/bin/wget here: the wget branch is not run");
            return;
        }
        ToolDir dir("wget", "/usr/bin/wget");
        auto ok = run_probe(good, dir.path());
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        auto bad = run_probe(wrong_body, dir.path());
        INFO(bad.output);
        CHECK(bad.exit_code > 0);
        auto bad_header = run_probe(wrong_header, dir.path());
        INFO(bad_header.output);
        CHECK(bad_header.exit_code > 0);
    }
    SECTION("with none of them the probe fails and says why") {
        ToolDir dir("", "");
        auto r = run_probe(good, dir.path());
        CHECK(r.exit_code == 1);
        CHECK(contains(r.output, "curl, python3 or wget"));
    }
}

TEST_CASE("k8s serve: the Service selects the replicas on the serving port", "[serve]") {
    auto spec = load_task("name: llm\nservice:\n  readiness_probe: /health\n  ports: 8080\nrun: x\n");
    auto plan = serve_plan();
    plan.service_type = "LoadBalancer";
    auto m = render_ok(spec, plan);
    const auto& s = m.service;
    CHECK(s["apiVersion"] == "v1");
    CHECK(s["kind"] == "Service");
    CHECK(s["metadata"]["name"] == "llm");
    CHECK(s["metadata"]["namespace"] == "ml");
    CHECK(s["metadata"]["labels"]["tandem.dev/service"] == "llm");
    CHECK(s["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tandem");
    CHECK(s["spec"]["type"] == "LoadBalancer");
    CHECK(s["spec"]["selector"] == json{{"tandem.dev/service", "llm"}});
    REQUIRE(s["spec"]["ports"].size() == 1);
    CHECK(s["spec"]["ports"][0]["name"] == "http");
    CHECK(s["spec"]["ports"][0]["port"] == 8080);
    CHECK(s["spec"]["ports"][0]["targetPort"] == 8080);
    CHECK(render_ok(spec, serve_plan()).service["spec"]["type"] == "ClusterIP");
    CHECK(service_selector("llm") == "tandem.dev/service=llm");
}

TEST_CASE("k8s serve: service.ports wins over resources.ports", "[serve]") {
    auto spec = load_task(
        "name: llm\nresources:\n  ports: [8000]\nservice:\n  readiness_probe: /\n  ports: 8080\nrun: x\n");
    auto m = render_ok(spec, serve_plan());
    CHECK(m.service["spec"]["ports"][0]["targetPort"] == 8080);
    CHECK(main_container(m)["readinessProbe"]["httpGet"]["port"] == 8080);
}

TEST_CASE("k8s serve: autoscales only with a target and a max above min", "[serve]") {
    ServiceSpec s;
    CHECK_FALSE(autoscales(s));
    s.max_replicas = 4;
    CHECK_FALSE(autoscales(s)); // no target
    s.target_qps_per_replica = 2.0;
    CHECK(autoscales(s));
    s.min_replicas = 4;
    CHECK_FALSE(autoscales(s)); // max == min: a fixed count
    s.max_replicas.reset();
    CHECK_FALSE(autoscales(s));
}

TEST_CASE("k8s serve: the HorizontalPodAutoscaler follows replica_policy and the metric the cluster serves",
          "[serve]") {
    const std::string autoscaled = R"(name: llm
service:
  readiness_probe: /health
  replica_policy:
    min_replicas: 2
    max_replicas: 5
    target_qps_per_replica: 2.5
    upscale_delay_seconds: 30
    downscale_delay_seconds: 600
  ports: 8080
run: x
)";
    SECTION("no replica_policy: no HPA") {
        auto spec =
            load_task("name: llm\nservice:\n  readiness_probe: /\n  replicas: 3\n  ports: 8080\nrun: x\n");
        auto plan = serve_plan();
        plan.metric_served = true;
        auto m = render_ok(spec, plan);
        CHECK_FALSE(m.hpa);
        CHECK(m.deployment["spec"]["replicas"] == 3);
        CHECK(m.notes.empty());
    }
    SECTION("autoscaling without the metric: no HPA and a note naming the metric") {
        auto plan = serve_plan();
        plan.qps_metric = "http_requests_per_second";
        plan.metric_served = false;
        auto m = render_ok(load_task(autoscaled), plan);
        CHECK_FALSE(m.hpa);
        CHECK(m.deployment["spec"]["replicas"] == 2);
        CHECK(any_note_contains(m, "http_requests_per_second"));
    }
    SECTION("autoscaling with the metric served") {
        for (bool v2 : {false, true}) {
            auto plan = serve_plan();
            plan.qps_metric = "http_requests_per_second";
            plan.metric_served = true;
            plan.hpa_v2 = v2;
            auto m = render_ok(load_task(autoscaled), plan);
            REQUIRE(m.hpa);
            const auto& h = *m.hpa;
            CHECK(h["apiVersion"] == (v2 ? "autoscaling/v2" : "autoscaling/v2beta2"));
            CHECK(h["kind"] == "HorizontalPodAutoscaler");
            CHECK(h["metadata"]["name"] == "llm");
            CHECK(h["metadata"]["namespace"] == "ml");
            CHECK(h["metadata"]["labels"]["tandem.dev/service"] == "llm");
            CHECK(h["spec"]["scaleTargetRef"] ==
                  json{{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "llm"}});
            CHECK(h["spec"]["minReplicas"] == 2);
            CHECK(h["spec"]["maxReplicas"] == 5);
            REQUIRE(h["spec"]["metrics"].size() == 1);
            const auto& metric = h["spec"]["metrics"][0];
            CHECK(metric["type"] == "Pods");
            CHECK(metric["pods"]["metric"]["name"] == "http_requests_per_second");
            CHECK(metric["pods"]["target"]["type"] == "AverageValue");
            CHECK(metric["pods"]["target"]["averageValue"] == qps_quantity(2.5));
            CHECK(metric["pods"]["target"]["averageValue"] == "2500m");
            CHECK(h["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 30);
            CHECK(h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600);
            CHECK(m.deployment["spec"]["replicas"] == 2);
            CHECK(m.notes.empty());
        }
    }
    SECTION("a delay above 3600 s is clamped with a note") {
        auto spec = load_task(R"(name: llm
service:
  readiness_probe: /health
  replica_policy:
    min_replicas: 1
    max_replicas: 3
    target_qps_per_replica: 2
    downscale_delay_seconds: 7200
  ports: 8080
run: x
)");
        auto plan = serve_plan();
        plan.metric_served = true;
        auto m = render_ok(spec, plan);
        REQUIRE(m.hpa);
        CHECK((*m.hpa)["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 3600);
        CHECK((*m.hpa)["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] ==
              300); // SkyPilot's default
        CHECK((*m.hpa)["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "2");
        REQUIRE(m.notes.size() == 1);
        CHECK(contains(m.notes[0], "downscale_delay_seconds"));
        CHECK(contains(m.notes[0], "7200"));
        CHECK(contains(m.notes[0], "3600"));
    }
}

TEST_CASE("k8s serve: what cannot be served is refused naming the field", "[serve]") {
    const auto plan = serve_plan();
    SECTION("no service section") {
        auto spec = load_task("name: llm\nrun: x\n");
        CHECK(contains(refusal(spec, plan), "service:"));
    }
    SECTION("more than one node per replica") {
        auto spec =
            load_task("name: llm\nnum_nodes: 2\nservice:\n  readiness_probe: /\n  ports: 8080\nrun: x\n");
        CHECK(contains(refusal(spec, plan), "num_nodes"));
    }
    SECTION("no port at all") {
        auto spec = load_task("name: llm\nservice:\n  readiness_probe: /\nrun: x\n");
        CHECK(contains(refusal(spec, plan), "service.ports"));
    }
    SECTION("resources.ports only a range") {
        auto spec =
            load_task("name: llm\nresources:\n  ports: 8000-8010\nservice:\n  readiness_probe: /\nrun: x\n");
        REQUIRE(spec.resources.ports.size() == 1);
        CHECK(contains(refusal(spec, plan), "service.ports"));
    }
    SECTION("resources.ports with two ports") {
        auto spec = load_task(
            "name: llm\nresources:\n  ports: [8000, 8001]\nservice:\n  readiness_probe: /\nrun: x\n");
        CHECK(contains(refusal(spec, plan), "service.ports"));
    }
    SECTION("min_replicas 0 with autoscaling") {
        auto spec = load_task(R"(name: llm
service:
  readiness_probe: /
  replica_policy:
    min_replicas: 0
    max_replicas: 3
    target_qps_per_replica: 1
  ports: 8080
run: x
)");
        CHECK(contains(refusal(spec, plan), "service.replica_policy.min_replicas"));
    }
    SECTION("tls") {
        auto spec = load_task("name: llm\nservice:\n  readiness_probe: /\n  ports: 8080\nrun: x\n");
        spec.service->tls = std::pair<std::string, std::string>{"/tmp/key.pem", "/tmp/cert.pem"};
        CHECK(contains(refusal(spec, plan), "service.tls"));
    }
    SECTION("a local upload") {
        auto spec = load_task("name: llm\nservice:\n  readiness_probe: /\n  ports: 8080\nrun: x\n");
        auto upload_plan = plan;
        upload_plan.pod.upload = PodUpload{};
        upload_plan.pod.upload->workdir = true;
        CHECK(contains(refusal(spec, upload_plan), "workdir"));
    }
}

TEST_CASE("k8s serve: secrets live in a Secret of the service that the replicas reference", "[serve]") {
    auto spec = load_task(R"(name: llm
secrets:
  HF_TOKEN: hf_s3cr3t
service:
  readiness_probe: /health
  ports: 8080
run: x
)");
    auto masked = render_ok(spec, serve_plan(), true);
    REQUIRE(masked.secret);
    const auto& s = *masked.secret;
    CHECK(s["kind"] == "Secret");
    CHECK(s["metadata"]["name"] == "llm-secrets");
    CHECK(s["metadata"]["namespace"] == "ml");
    CHECK(s["metadata"]["labels"]["tandem.dev/service"] == "llm");
    CHECK_FALSE(s["metadata"]["labels"].contains("tandem.dev/job"));
    CHECK(s["stringData"]["HF_TOKEN"] == "<redacted>");
    CHECK_FALSE(contains(to_yaml(masked), "hf_s3cr3t"));

    auto real = render_ok(spec, serve_plan(), false);
    REQUIRE(real.secret);
    CHECK((*real.secret)["stringData"]["HF_TOKEN"] == "hf_s3cr3t");
    const auto ref = env_entry(main_container(real), "HF_TOKEN");
    CHECK_FALSE(ref.contains("value"));
    CHECK(ref["valueFrom"]["secretKeyRef"]["name"] == "llm-secrets");
    CHECK(ref["valueFrom"]["secretKeyRef"]["key"] == "HF_TOKEN");
    CHECK_FALSE(contains(real.deployment.dump(), "hf_s3cr3t"));
}

TEST_CASE("k8s serve: a git workdir is checked out in a folder per pod", "[serve]") {
    auto spec = load_task(R"(name: llm
workdir:
  url: https://example.com/org/repo.git
  ref: v1
service:
  readiness_probe: /health
  ports: 8080
run: x
)");
    REQUIRE(spec.git_workdir);
    auto m = render_ok(spec, serve_plan());
    const auto& c = main_container(m);
    CHECK(env_entry(c, "TANDEM_GIT_DIR")["value"] == "/tmp/tandem-workdir-$(TANDEM_POD_NAME)");
    CHECK(env_entry(c, "TANDEM_POD_NAME")["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name");
    const int pod_name = env_index(c, "TANDEM_POD_NAME");
    const int git_dir = env_index(c, "TANDEM_GIT_DIR");
    CHECK(pod_name >= 0);
    CHECK(pod_name < git_dir); // the kubelet expands $(NAME) only from variables defined before
    CHECK(env_entry(c, "TANDEM_GIT_URL")["value"] == "https://example.com/org/repo.git");
}

TEST_CASE("k8s serve: qps_quantity writes whole numbers plainly and fractions in milli units", "[serve]") {
    CHECK(qps_quantity(2) == "2");
    CHECK(qps_quantity(2.5) == "2500m");
    CHECK(qps_quantity(0.001) == "1m");
    CHECK(qps_quantity(0.0001) == "1m"); // never 0: the API refuses an averageValue of 0
    CHECK(qps_quantity(100) == "100");
    CHECK(qps_quantity(0.25) == "250m");
}

TEST_CASE("k8s serve: to_yaml writes Secret then Deployment then Service then HPA", "[serve]") {
    auto kinds_of = [](const std::string& text) {
        std::vector<std::string> kinds;
        std::size_t docs = 0;
        std::size_t pos = 0;
        while (pos < text.size()) {
            auto end = text.find('\n', pos);
            if (end == std::string::npos) {
                end = text.size();
            }
            const std::string line = text.substr(pos, end - pos);
            if (line == "---") {
                ++docs;
            } else if (line.rfind("kind: ", 0) == 0) { // top level only (scaleTargetRef's is indented)
                auto kind = line.substr(6);
                if (kind.size() >= 2 && kind.front() == '"' && kind.back() == '"') {
                    kind = kind.substr(1, kind.size() - 2);
                }
                kinds.push_back(kind);
            }
            pos = end + 1;
        }
        CHECK(docs == kinds.size());
        return kinds;
    };
    auto spec = load_task(R"(name: llm
secrets:
  HF_TOKEN: hf_s3cr3t
service:
  readiness_probe: /health
  replica_policy:
    min_replicas: 1
    max_replicas: 3
    target_qps_per_replica: 2
  ports: 8080
run: x
)");
    auto plan = serve_plan();
    plan.metric_served = true;
    auto m = render_ok(spec, plan, true);
    CHECK(kinds_of(to_yaml(m)) ==
          std::vector<std::string>{"Secret", "Deployment", "Service", "HorizontalPodAutoscaler"});

    auto plain = render_ok(load_task("name: llm\nservice:\n  readiness_probe: /\n  ports: 8080\nrun: x\n"),
                           serve_plan());
    CHECK(kinds_of(to_yaml(plain)) == std::vector<std::string>{"Deployment", "Service"});
}
