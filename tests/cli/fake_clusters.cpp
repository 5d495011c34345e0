#include "fake_clusters.hpp"

#include <ctime>

#include <catch2/catch.hpp>

namespace tandem_test {

using json = nlohmann::json;

namespace {

std::string fixture_text(const std::string& relative) {
    auto text = read_file(std::string(TANDEM_FIXTURES) + "/" + relative);
    REQUIRE(text);
    return *text;
}

std::int64_t now_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string rfc3339(std::int64_t t) {
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

constexpr const char* k_not_found =
    R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})";

} // namespace

// --- slurmrestd ---

int FakeSlurm::accept_submit(const std::string& body) {
    const json req = json::parse(body, nullptr, false);
    const json job = req.is_object() ? req.value("job", json::object()) : json::object();
    std::lock_guard lock(m_mutex);
    const int id = m_next++;
    m_jobs.push_back({{"job_id", id},
                      {"name", job.value("name", "")},
                      {"job_state", "RUNNING"},
                      {"state_reason", "None"},
                      {"comment", job.value("comment", "")},
                      {"start_time", now_seconds()},
                      {"end_time", 0},
                      {"nodes", "cpu1"},
                      {"standard_output", job.value("standard_output", "")}});
    return id;
}

std::string FakeSlurm::submit_answer(int id) {
    return json{{"errors", json::array()}, {"job_id", id}, {"step_id", "BATCH"}, {"job_submit_user_msg", ""}}
        .dump();
}

std::size_t FakeSlurm::jobs() const {
    std::lock_guard lock(m_mutex);
    return m_jobs.size();
}

std::string FakeSlurm::jobs_body() const {
    std::lock_guard lock(m_mutex);
    return json{{"jobs", m_jobs}, {"errors", json::array()}}.dump();
}

void FakeSlurm::handle(FaultConnection& c, const FaultRequest& r) {
    const std::string p = r.path();
    if (p == "/openapi/v3") {
        json paths = json::object();
        for (const auto& served : json::parse(fixture_text("slurm/v0.0.38/openapi_v3_paths.json"))) {
            paths[served.get<std::string>()] = json::object();
        }
        reply(c, 200, json{{"paths", paths}}.dump());
    } else if (p == "/slurm/v0.0.38/ping") {
        reply(c, 200, fixture_text("slurm/v0.0.38/ping.json"));
    } else if (p == "/slurm/v0.0.38/partitions") {
        reply(c, 200, fixture_text("slurm/v0.0.38/partitions_built.json"));
    } else if (p == "/slurm/v0.0.38/nodes") {
        reply(c, 200, fixture_text("slurm/v0.0.38/nodes_built.json"));
    } else if (r.method == "POST" && p == "/slurm/v0.0.38/job/submit") {
        reply(c, 200, submit_answer(accept_submit(r.body)));
    } else if (r.method == "GET" && p == "/slurm/v0.0.38/jobs") {
        reply(c, 200, jobs_body());
    } else if (r.method == "DELETE") {
        reply(c, 200, R"({"errors":[]})");
    } else {
        reply(c, 404, R"({"errors":[{"error":"Unable to find job","error_number":2017}]})");
    }
}

// --- Kubernetes API server ---

std::pair<int, json> FakeKube::create_job(const std::string& body) {
    json job = json::parse(body, nullptr, false);
    if (!job.is_object()) {
        job = json::object();
    }
    const std::string name = job["metadata"].value("name", "");
    std::lock_guard lock(m_mutex);
    for (const auto& existing : m_jobs) {
        if (existing["metadata"].value("name", "") == name) {
            return {409,
                    {{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"status", "Failure"},
                     {"message", "jobs.batch \"" + name + "\" already exists"},
                     {"reason", "AlreadyExists"},
                     {"code", 409}}};
        }
    }
    job["metadata"]["namespace"] = k_ns;
    job["metadata"]["uid"] = "uid-" + std::to_string(++m_created);
    job["metadata"]["creationTimestamp"] = rfc3339(now_seconds());
    job["status"] = {{"active", 1}, {"startTime", rfc3339(now_seconds())}};
    m_jobs.push_back(job);
    return {201, job};
}

std::optional<json> FakeKube::job_named(const std::string& name) const {
    std::lock_guard lock(m_mutex);
    for (const auto& job : m_jobs) {
        if (job["metadata"].value("name", "") == name) {
            return job;
        }
    }
    return std::nullopt;
}

std::size_t FakeKube::jobs() const {
    std::lock_guard lock(m_mutex);
    return m_jobs.size();
}

std::string FakeKube::pods_body() const {
    std::lock_guard lock(m_mutex);
    const std::string now = rfc3339(now_seconds());
    json items = json::array();
    for (const auto& job : m_jobs) {
        const std::string name = job["metadata"].value("name", "");
        json labels = job["spec"]["template"]["metadata"].value("labels", json::object());
        labels["job-name"] = name;
        const json running = {{"name", "main"},
                              {"ready", true},
                              {"restartCount", 0},
                              {"state", {{"running", {{"startedAt", now}}}}}};
        items.push_back({{"metadata",
                          {{"name", name + "-x7k2p"},
                           {"namespace", k_ns},
                           {"uid", "pod-" + name},
                           {"creationTimestamp", now},
                           {"labels", labels},
                           {"annotations", {{"batch.kubernetes.io/job-completion-index", "0"}}}}},
                         {"spec", {{"nodeName", "cpu-0"}}},
                         {"status",
                          {{"phase", "Running"},
                           {"podIP", "10.0.0.7"},
                           {"startTime", now},
                           {"containerStatuses", json::array({running})}}}});
    }
    return json{
        {"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "7"}}}, {"items", items}}
        .dump();
}

std::string FakeKube::jobs_body(const std::string& selector) const {
    std::lock_guard lock(m_mutex);
    json items = json::array();
    const auto eq = selector.find('=');
    for (const auto& job : m_jobs) {
        const json* labels = job.contains("metadata") ? &job["metadata"] : nullptr;
        labels = labels != nullptr && labels->contains("labels") ? &(*labels)["labels"] : nullptr;
        if (eq == std::string::npos ||
            (labels != nullptr && labels->value(selector.substr(0, eq), "") == selector.substr(eq + 1))) {
            items.push_back(job);
        }
    }
    return json{{"kind", "JobList"},
                {"apiVersion", "batch/v1"},
                {"metadata", {{"resourceVersion", "7"}}},
                {"items", items}}
        .dump();
}

namespace {

// labelSelector's value from a request target, %-decoded ("" when there is none).
std::string label_selector(const std::string& target) {
    const std::string key = "labelSelector=";
    const auto at = target.find(key);
    if (at == std::string::npos) {
        return "";
    }
    const std::string raw = target.substr(at + key.size(), target.find('&', at) - at - key.size());
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '%' && i + 2 < raw.size()) {
            out += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += raw[i];
        }
    }
    return out;
}

} // namespace

void FakeKube::handle(FaultConnection& c, const FaultRequest& r) {
    const std::string p = r.path();
    const std::string jobs = std::string("/apis/batch/v1/namespaces/") + k_ns + "/jobs";
    const std::string core = std::string("/api/v1/namespaces/") + k_ns + "/";
    if (p == "/version") {
        reply(c, 200, R"({"major":"1","minor":"20","gitVersion":"v1.20.2","platform":"linux/amd64"})");
    } else if (p == "/api/v1/nodes") {
        reply(c, 200, fixture_text("k8s/inventory_nodes.json"));
    } else if (p == "/api/v1/pods") {
        reply(c, 200, R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]})");
    } else if (r.method == "POST" && p == jobs) {
        const auto [status, object] = create_job(r.body);
        reply(c, status, object.dump());
    } else if (r.method == "GET" && p.rfind(jobs + "/", 0) == 0) {
        const auto job = job_named(p.substr(jobs.size() + 1));
        reply(c, job ? 200 : 404, job ? job->dump() : k_not_found);
    } else if (r.method == "POST") { // dry-run pods, Services, Secrets, ConfigMaps: taken as given
        const json object = json::parse(r.body, nullptr, false);
        reply(c, 201, object.is_discarded() ? "{}" : object.dump());
    } else if (r.method == "GET" && p == jobs) {
        reply(c, 200, jobs_body(label_selector(r.target)));
    } else if (r.method == "GET" && p == core + "pods") {
        reply(c, 200, pods_body());
    } else if (r.method == "GET" && (p == core + "services" || p == core + "secrets")) {
        reply(c, 200, R"({"kind":"List","apiVersion":"v1","metadata":{},"items":[]})");
    } else if (r.method == "DELETE") {
        reply(c, 200, R"({"kind":"Status","apiVersion":"v1","status":"Success"})");
    } else {
        reply(c, 404, k_not_found);
    }
}

// --- Rig ---

Rig::Rig(Backend backend, int timeout_seconds)
    : m_backend(backend), m_timeout(timeout_seconds),
      m_server([this](FaultConnection& c, const FaultRequest& r) { healthy_answer(c, r); }) {
    const std::string timeout = "\"" + std::to_string(timeout_seconds) + "\"";
    if (backend == Backend::slurm) {
        cluster = "lab";
        list_path = "/slurm/v0.0.38/jobs";
        submit_path = "/slurm/v0.0.38/job/submit";
        m_t.write_config("discover_kubeconfig: false\nclusters:\n  - name: lab\n    type: slurm\n    rest:\n"
                         "      url: " +
                         m_server.url() +
                         "\n      user: alice\n      token: sekrit-token-19\n"
                         "      api_version: v0.0.38\n    home: " +
                         m_t.home() + "\n    timeout_seconds: " + timeout + "\n");
    } else {
        cluster = "k8s/fake";
        list_path = std::string("/api/v1/namespaces/") + FakeKube::k_ns + "/pods";
        submit_path = std::string("/apis/batch/v1/namespaces/") + FakeKube::k_ns + "/jobs";
        const std::string kubeconfig = m_t.write(
            "home/kubeconfig.yaml",
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: "
            "http://tandem@127.0.0.1:" +
                std::to_string(m_server.port()) +
                "\nusers:\n- name: alice\n  user:\n    token: sekrit-token-19\ncontexts:\n- name: fake\n"
                "  context:\n    cluster: fake\n    user: alice\n    namespace: default\n"
                "current-context: fake\n");
        m_t.write_config("discover_kubeconfig: false\nclusters:\n  - name: k8s/fake\n    type: kubernetes\n"
                         "    context: fake\n    kubeconfig: " +
                         kubeconfig + "\n    timeout_seconds: " + timeout + "\n");
    }
    task = m_t.write("faulty.yaml", "name: faulty\nrun: sleep 600\n");
}

std::size_t Rig::remote_jobs() const {
    return m_backend == Backend::slurm ? m_slurm.jobs() : m_kube.jobs();
}

RunResult Rig::tandem(const std::vector<std::string>& args) const {
    EnvOverrides env;
    for (const char* name : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                             "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
        env[name] = std::nullopt;
    }
    RunOptions options = with_env(env);
    options.timeout = 90s;
    return m_t.tandem(args, options);
}

void Rig::healthy_answer(FaultConnection& c, const FaultRequest& r) {
    if (m_backend == Backend::slurm) {
        m_slurm.handle(c, r);
    } else {
        m_kube.handle(c, r);
    }
}

void Rig::heal() {
    m_server.set_handler([this](FaultConnection& c, const FaultRequest& r) { healthy_answer(c, r); });
}

void Rig::misbehave(std::function<bool(const FaultRequest&)> which, FaultHandler bad) {
    m_server.set_handler(
        [this, which = std::move(which), bad = std::move(bad)](FaultConnection& c, const FaultRequest& r) {
            if (which(r)) {
                bad(c, r);
            } else {
                healthy_answer(c, r);
            }
        });
}

void Rig::misbehave(FaultHandler bad) {
    misbehave([](const FaultRequest&) { return true; }, std::move(bad));
}

std::string Rig::list_answer() const {
    return m_backend == Backend::slurm ? m_slurm.jobs_body() : m_kube.pods_body();
}

std::string Rig::list_key() const {
    return m_backend == Backend::slurm ? "jobs" : "items";
}

std::pair<int, std::string> Rig::take_submit(const FaultRequest& r) {
    if (m_backend == Backend::slurm) {
        return {200, FakeSlurm::submit_answer(m_slurm.accept_submit(r.body))};
    }
    const auto [status, object] = m_kube.create_job(r.body);
    return {status, object.dump()};
}

int Rig::launch_running() {
    heal();
    auto r = tandem({"launch", "-d", task});
    INFO(r << "\n--- requests ---\n" << m_server.transcript());
    REQUIRE(r.exit_code == 0);
    const int id = std::stoi(r.out);
    const json job = job_json(id, true);
    REQUIRE(job["state"] == "RUNNING");
    REQUIRE_FALSE(job.value("remote_id", std::string()).empty());
    return id;
}

json Rig::job_json(int id, bool refresh) const {
    std::vector<std::string> args{"status", std::to_string(id), "--json"};
    if (!refresh) {
        args.push_back("--no-refresh");
    }
    auto r = tandem(args);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j["jobs"].size() == 1);
    return j["jobs"][0];
}

Store Rig::store() const {
    auto r = tandem({"status", "--all", "--json", "--no-refresh"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    const json j = json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    Store out;
    for (const auto& job : j["jobs"]) {
        out[job["id"].get<int>()] = {job.value("state", ""), job.value("remote_id", "")};
    }
    return out;
}

} // namespace tandem_test
