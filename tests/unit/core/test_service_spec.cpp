// SkyPilot's `service:` section (sky serve) read into TaskSpec::service: the forms SkyPilot's
// get_service_schema takes, its defaults and checks (sky/serve/service_spec.py), and what tandem refuses.

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "core/spec_loader.hpp"
#include "sys/files.hpp"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

SpecLoad load(const std::string& yaml, const std::string& base_dir = "/tmp") {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    options.base_dir = base_dir;
    options.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    return load_spec(yaml, "task.yaml", {}, options);
}

TaskSpec load_ok(const std::string& yaml, const std::string& base_dir = "/tmp") {
    auto r = load(yaml, base_dir);
    INFO(format_diagnostics(r.diagnostics));
    REQUIRE(r.spec);
    return *r.spec;
}

ServiceSpec service_of(const std::string& yaml, const std::string& base_dir = "/tmp") {
    auto spec = load_ok(yaml, base_dir);
    REQUIRE(spec.service);
    return *spec.service;
}

std::vector<std::string> errors_of(const std::string& yaml, const std::string& base_dir = "/tmp") {
    auto r = load(yaml, base_dir);
    CHECK_FALSE(r.spec);
    std::vector<std::string> out;
    for (const auto& d : r.diagnostics) {
        out.push_back(format_diagnostic(d));
    }
    return out;
}

// The one error of `yaml`, which must start with `prefix` (file:line:col: path: message...).
void one_error(const std::string& yaml, const std::string& prefix) {
    auto errs = errors_of(yaml);
    std::string all;
    for (const auto& e : errs) {
        all += e + "\n";
    }
    INFO(yaml << "gave:\n" << all);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].rfind(prefix, 0) == 0);
}

bool contains(const std::vector<std::string>& lines, const std::string& needle) {
    for (const auto& l : lines) {
        if (l.find(needle) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// A directory with tls files in it, removed at the end of the test.
class TlsDir {
public:
    TlsDir() {
        static std::atomic<int> n{0};
        m_dir = fs::temp_directory_path() /
                ("tandem-service-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
        fs::create_directories(m_dir / "certs");
        std::ofstream(m_dir / "certs" / "svc.key") << "not a real key\n";
        std::ofstream(m_dir / "certs" / "svc.crt") << "not a real certificate\n";
    }
    ~TlsDir() {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    TlsDir(const TlsDir&) = delete;
    TlsDir& operator=(const TlsDir&) = delete;
    std::string path() const { return m_dir.string(); }

private:
    fs::path m_dir;
};

} // namespace

TEST_CASE("a task without service has none") {
    CHECK_FALSE(load_ok("run: x\n").service);
}

TEST_CASE("a readiness probe written as a path takes SkyPilot's defaults") {
    auto s = service_of("service:\n  readiness_probe: /health\nrun: python server.py\n");
    CHECK(s.readiness_probe.path == "/health");
    CHECK(s.readiness_probe.initial_delay_seconds == 1200);
    CHECK(s.readiness_probe.timeout_seconds == 15);
    CHECK_FALSE(s.readiness_probe.post_data);
    CHECK(s.readiness_probe.headers.empty());
    CHECK(s.min_replicas == 1);
    CHECK_FALSE(s.max_replicas);
    CHECK_FALSE(s.target_qps_per_replica);
    CHECK(s.upscale_delay_seconds == 300);
    CHECK(s.downscale_delay_seconds == 1200);
    CHECK_FALSE(s.has_replica_policy);
    CHECK_FALSE(s.port);
    CHECK_FALSE(s.load_balancing_policy);
    CHECK_FALSE(s.tls);
}

TEST_CASE("an empty service mapping probes / with one replica") {
    auto s = service_of("service: {}\nrun: x\n");
    CHECK(s.readiness_probe.path == "/");
    CHECK(s.min_replicas == 1);
    CHECK_FALSE(s.has_replica_policy);
    one_error("service:\nrun: x\n", "task.yaml:1:1: service: must be a mapping");
    one_error("service: [a]\nrun: x\n", "task.yaml:1:10: service: must be a mapping");
}

TEST_CASE("a full readiness probe mapping with post_data and headers") {
    SECTION("post_data as a mapping") {
        auto s = service_of("service:\n"
                            "  readiness_probe:\n"
                            "    path: /v1/models\n"
                            "    initial_delay_seconds: 600\n"
                            "    timeout_seconds: 2.5\n"
                            "    post_data: {model: llama, max_tokens: 1, stream: false}\n"
                            "    headers:\n"
                            "      Authorization: Bearer abc\n"
                            "      X-Probe: yes\n"
                            "run: x\n");
        const auto& p = s.readiness_probe;
        CHECK(p.path == "/v1/models");
        CHECK(p.initial_delay_seconds == 600);
        CHECK(p.timeout_seconds == 3); // whole seconds, rounded up
        REQUIRE(p.post_data);
        CHECK(*p.post_data == nlohmann::json{{"model", "llama"}, {"max_tokens", 1}, {"stream", false}});
        CHECK(p.headers == std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer abc"},
                                                                            {"X-Probe", "yes"}});
    }
    SECTION("post_data as a JSON string") {
        auto s = service_of("service:\n"
                            "  readiness_probe:\n"
                            "    path: /generate\n"
                            "    post_data: '{\"prompt\": \"hi\", \"n\": [1, 2]}'\n"
                            "run: x\n");
        REQUIRE(s.readiness_probe.post_data);
        CHECK(*s.readiness_probe.post_data == nlohmann::json::parse(R"({"prompt": "hi", "n": [1, 2]})"));
        CHECK(s.readiness_probe.initial_delay_seconds == 1200);
        CHECK(s.readiness_probe.timeout_seconds == 15);
    }
    SECTION("the locations of the probe's fields are kept") {
        auto spec = load_ok("service:\n  readiness_probe:\n    path: /\n    headers: {A: b}\nrun: x\n");
        CHECK(spec.location_of("service.readiness_probe.path").line == 3);
        CHECK(spec.location_of("service.readiness_probe.headers.A").line == 4);
        CHECK(spec.location_of("service").line == 1);
    }
}

TEST_CASE("readiness probe errors name the field and its position") {
    one_error("service:\n  readiness_probe: health\nrun: x\n",
              "task.yaml:2:20: service.readiness_probe: must start with '/' (got 'health')");
    one_error("service:\n  readiness_probe:\n    path: v1/models\nrun: x\n",
              "task.yaml:3:11: service.readiness_probe.path: must start with '/'");
    one_error("service:\n  readiness_probe:\n    path: /a b\nrun: x\n",
              "task.yaml:3:11: service.readiness_probe.path: must be a URL path");
    one_error("service:\n  readiness_probe:\n    initial_delay_seconds: 5\nrun: x\n",
              "task.yaml:3:5: service.readiness_probe.path: is required");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    post_data: '{\"a\": 1'\nrun: x\n",
              "task.yaml:4:16: service.readiness_probe.post_data: is not valid JSON");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    post_data: [1, 2]\nrun: x\n",
              "task.yaml:4:16: service.readiness_probe.post_data: must be a mapping or a string of JSON");
    one_error(
        "service:\n  readiness_probe:\n    path: /v1\n    timeout_seconds: 0\nrun: x\n",
        "task.yaml:4:22: service.readiness_probe.timeout_seconds: must be a number of seconds, more than 0");
    one_error(
        "service:\n  readiness_probe:\n    path: /v1\n    initial_delay_seconds: -5\nrun: x\n",
        "task.yaml:4:28: service.readiness_probe.initial_delay_seconds: must be a number of seconds, 0 or "
        "more");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    initial_delay_seconds: soon\nrun: x\n",
              "task.yaml:4:28: service.readiness_probe.initial_delay_seconds: must be a number of seconds");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    headers:\n      Bad Header: x\nrun: x\n",
              "task.yaml:5:7: service.readiness_probe.headers.Bad Header: is not an HTTP header name");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    headers:\n      A: x\n      a: y\nrun: x\n",
              "task.yaml:6:7: service.readiness_probe.headers.a: duplicate header");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    headers: [A]\nrun: x\n",
              "task.yaml:4:14: service.readiness_probe.headers: must be a mapping of header names to values");
    one_error("service:\n  readiness_probe:\n    path: /v1\n    headers:\n      A: \"x\\r\\nB: y\"\nrun: x\n",
              "task.yaml:5:10: service.readiness_probe.headers.A: must be one line");
}

TEST_CASE("post_data nested too deeply is refused without a crash") {
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    auto errs =
        errors_of("service:\n  readiness_probe:\n    path: /\n    post_data: '" + deep + "'\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("service.readiness_probe.post_data: is nested deeper than 64 levels") !=
          std::string::npos);
    const std::string huge = std::string(200000, '[');
    CHECK_FALSE(
        errors_of("service:\n  readiness_probe:\n    path: /\n    post_data: '" + huge + "'\nrun: x\n")
            .empty());
}

TEST_CASE("replicas sets a fixed count without autoscaling") {
    auto s = service_of("service:\n  readiness_probe: /\n  replicas: 3\nrun: x\n");
    CHECK(s.min_replicas == 3);
    CHECK_FALSE(s.max_replicas);
    CHECK_FALSE(s.target_qps_per_replica);
    CHECK_FALSE(s.has_replica_policy);
    CHECK(service_of("service:\n  replicas: 0\nrun: x\n").min_replicas == 0);
    one_error("service:\n  replicas: -1\nrun: x\n",
              "task.yaml:2:13: service.replicas: '-1' is not a whole number, 0 or more");
    one_error("service:\n  replicas: 1.5\nrun: x\n",
              "task.yaml:2:13: service.replicas: '1.5' is not a whole number, 0 or more");
}

TEST_CASE("a replica_policy with autoscaling") {
    auto s = service_of("service:\n"
                        "  readiness_probe: /health\n"
                        "  replica_policy:\n"
                        "    min_replicas: 1\n"
                        "    max_replicas: 4\n"
                        "    target_qps_per_replica: 2.5\n"
                        "    upscale_delay_seconds: 60\n"
                        "    downscale_delay_seconds: 90.5\n"
                        "run: x\n");
    CHECK(s.has_replica_policy);
    CHECK(s.min_replicas == 1);
    CHECK(s.max_replicas == 4);
    CHECK(s.target_qps_per_replica == 2.5);
    CHECK(s.upscale_delay_seconds == 60);
    CHECK(s.downscale_delay_seconds == 91);
}

TEST_CASE("a replica_policy without autoscaling keeps SkyPilot's delays") {
    auto s = service_of("service:\n  replica_policy: {min_replicas: 2}\nrun: x\n");
    CHECK(s.has_replica_policy);
    CHECK(s.min_replicas == 2);
    CHECK_FALSE(s.max_replicas);
    CHECK(s.upscale_delay_seconds == 300);
    CHECK(s.downscale_delay_seconds == 1200);
    // max_replicas equal to min_replicas is a fixed count, as SkyPilot reads it.
    auto fixed = service_of("service:\n  replica_policy: {min_replicas: 2, max_replicas: 2}\nrun: x\n");
    CHECK(fixed.min_replicas == 2);
    CHECK_FALSE(fixed.max_replicas);
    auto fixed_qps = service_of("service:\n  replica_policy: {min_replicas: 2, max_replicas: 2, "
                                "target_qps_per_replica: 3}\nrun: x\n");
    CHECK_FALSE(fixed_qps.max_replicas);
    CHECK_FALSE(fixed_qps.target_qps_per_replica);
}

TEST_CASE("replica_policy errors as SkyPilot reports them") {
    one_error("service:\n  replica_policy:\n    min_replicas: 3\n    max_replicas: 2\nrun: x\n",
              "task.yaml:4:19: service.replica_policy.max_replicas: must be at least min_replicas (3)");
    one_error("service:\n  replica_policy:\n    min_replicas: 1\n    target_qps_per_replica: 5\nrun: x\n",
              "task.yaml:4:29: service.replica_policy.target_qps_per_replica: needs max_replicas");
    one_error(
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\nrun: x\n",
        "task.yaml:4:19: service.replica_policy.max_replicas: differs from min_replicas (1): to autoscale, "
        "set target_qps_per_replica");
    one_error("service:\n  replica_policy: {max_replicas: 2}\nrun: x\n",
              "task.yaml:2:19: service.replica_policy.min_replicas: is required");
    one_error(
        "service:\n  replicas: 2\n  replica_policy: {min_replicas: 1}\nrun: x\n",
        "task.yaml:3:3: service.replica_policy: cannot be combined with service.replicas; use one of them");
    one_error("service:\n  replica_policy:\n    min_replicas: -2\nrun: x\n",
              "task.yaml:3:19: service.replica_policy.min_replicas: '-2' is not a whole number, 0 or more");
    one_error(
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
        "    target_qps_per_replica: 0\nrun: x\n",
        "task.yaml:5:29: service.replica_policy.target_qps_per_replica: must be a number of queries per "
        "second, more than 0");
    one_error(
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replicas: 3\n"
        "    target_qps_per_replica: {'H100:1': 5, A100: 2}\nrun: x\n",
        "task.yaml:5:29: service.replica_policy.target_qps_per_replica: is a SkyPilot feature tandem does "
        "not support yet (a target per accelerator type); give one number");
    one_error(
        "service:\n  replica_policy:\n    min_replicas: 1\n    downscale_delay_seconds: -1\nrun: x\n",
        "task.yaml:4:30: service.replica_policy.downscale_delay_seconds: must be a number of seconds, 0 or "
        "more");
    one_error("service:\n  replica_policy: 3\nrun: x\n",
              "task.yaml:2:19: service.replica_policy: must be a mapping");
}

TEST_CASE("ports and load_balancing_policy") {
    auto s = service_of("service:\n  ports: 8080\n  load_balancing_policy: Least_Load\nrun: x\n");
    CHECK(s.port == 8080);
    CHECK(s.load_balancing_policy == "least_load");
    CHECK(service_of("service:\n  load_balancing_policy: INSTANCE_AWARE_LEAST_LOAD\nrun: x\n")
              .load_balancing_policy == "instance_aware_least_load");
    CHECK(service_of("service:\n  load_balancing_policy: round_robin\nrun: x\n").load_balancing_policy ==
          "round_robin");
    for (const char* bad : {"0", "65536", "8000-8010", "http"}) {
        INFO(bad);
        one_error(std::string("service:\n  ports: ") + bad + "\nrun: x\n",
                  std::string("task.yaml:2:10: service.ports: '") + bad +
                      "' is not a port: one number, 1-65535");
    }
    one_error(
        "service:\n  load_balancing_policy: random\nrun: x\n",
        "task.yaml:2:26: service.load_balancing_policy: 'random' is not a load balancing policy (one of: "
        "round_robin, least_load, instance_aware_least_load)");
}

TEST_CASE("spot fallback keys and worker pools are refused with the reason") {
    auto errs = errors_of("service:\n"
                          "  replica_policy:\n"
                          "    min_replicas: 1\n"
                          "    dynamic_ondemand_fallback: true\n"
                          "    base_ondemand_fallback_replicas: 1\n"
                          "    spot_placer: dynamic_fallback\n"
                          "    cost_rebalance: true\n"
                          "    num_overprovision: 1\n"
                          "run: x\n");
    CHECK(errs.size() == 5);
    const std::string why = ": is a cloud-only field (spot/on-demand fallback has no meaning on Kubernetes: "
                            "replicas run on the cluster's nodes)";
    CHECK(contains(errs, "task.yaml:4:5: service.replica_policy.dynamic_ondemand_fallback" + why));
    CHECK(contains(errs, "task.yaml:5:5: service.replica_policy.base_ondemand_fallback_replicas" + why));
    CHECK(contains(errs, "task.yaml:6:5: service.replica_policy.spot_placer" + why));
    CHECK(contains(errs, "task.yaml:7:5: service.replica_policy.cost_rebalance" + why));
    CHECK(contains(errs,
                   "task.yaml:8:5: service.replica_policy.num_overprovision: is a SkyPilot feature tandem "
                   "does not support yet (overprovisioned replicas)"));

    const std::string pools = "is a SkyPilot feature tandem does not support yet (SkyPilot worker pools)";
    one_error("service:\n  pool: true\nrun: x\n", "task.yaml:2:3: service.pool: " + pools);
    one_error("service:\n  pool: {workers: 2}\nrun: x\n", "task.yaml:2:3: service.pool: " + pools);
    one_error("service:\n  workers: 2\nrun: x\n", "task.yaml:2:3: service.workers: " + pools);
    CHECK(service_of("service:\n  pool: false\nrun: x\n").min_replicas == 1);
    one_error("service:\n  pool: maybe\nrun: x\n",
              "task.yaml:2:9: service.pool: 'maybe' is not true or false");
}

TEST_CASE("unknown service keys get did-you-mean") {
    one_error("service:\n  readines_probe: /\nrun: x\n",
              "task.yaml:2:3: service.readines_probe: unknown field (did you mean 'readiness_probe'?)");
    one_error(
        "service:\n  replica_policy:\n    min_replicas: 1\n    max_replica: 2\nrun: x\n",
        "task.yaml:4:5: service.replica_policy.max_replica: unknown field (did you mean 'max_replicas'?)");
    one_error("service:\n  readiness_probe:\n    path: /\n    inital_delay_seconds: 3\nrun: x\n",
              "task.yaml:4:5: service.readiness_probe.inital_delay_seconds: unknown field (did you mean "
              "'initial_delay_seconds'?)");
    CHECK(contains(errors_of("service:\n  tls: {keyfile: a, certfile: b, cafile: c}\nrun: x\n"),
                   "task.yaml:2:34: service.tls.cafile: unknown field"));
    CHECK(contains(errors_of("service:\n  zzzzzz: 1\nrun: x\n"), "service.zzzzzz: unknown field"));
}

TEST_CASE("tls files are resolved against the base directory and must exist") {
    TlsDir dir;
    const std::string certs = dir.path() + "/certs";
    SECTION("relative paths") {
        auto s = service_of(
            "service:\n  tls:\n    keyfile: certs/svc.key\n    certfile: ./certs/svc.crt\nrun: x\n",
            dir.path());
        REQUIRE(s.tls);
        CHECK(s.tls->first == fs::weakly_canonical(certs + "/svc.key").string());
        CHECK(s.tls->second == fs::weakly_canonical(certs + "/svc.crt").string());
    }
    SECTION("absolute paths") {
        auto s = service_of("service:\n  tls:\n    keyfile: " + certs + "/svc.key\n    certfile: " + certs +
                            "/svc.crt\nrun: x\n");
        REQUIRE(s.tls);
        CHECK(fs::path(s.tls->first).is_absolute());
    }
    SECTION("a missing file") {
        auto errs =
            errors_of("service:\n  tls:\n    keyfile: certs/nokey.pem\n    certfile: certs/svc.crt\nrun: x\n",
                      dir.path());
        REQUIRE(errs.size() == 1);
        CHECK(errs[0] == "task.yaml:3:14: service.tls.keyfile: 'certs/nokey.pem' does not exist");
    }
    SECTION("a directory is not a file") {
        auto errs = errors_of("service:\n  tls:\n    keyfile: certs/svc.key\n    certfile: certs\nrun: x\n",
                              dir.path());
        REQUIRE(errs.size() == 1);
        CHECK(errs[0] == "task.yaml:4:15: service.tls.certfile: 'certs' is not a file");
    }
    SECTION("both are required") {
        auto errs = errors_of("service:\n  tls:\n    keyfile: certs/svc.key\nrun: x\n", dir.path());
        REQUIRE(errs.size() == 1);
        CHECK(errs[0] == "task.yaml:3:5: service.tls.certfile: is required (the TLS certificate file)");
        CHECK(contains(errors_of("service:\n  tls: certs\nrun: x\n", dir.path()),
                       "task.yaml:2:8: service.tls: must be a mapping (keyfile, certfile)"));
    }
}

TEST_CASE("serving_port: the service's port or the single port of resources") {
    ServiceSpec s;
    Resources r;
    CHECK_FALSE(s.serving_port(r));
    r.ports = {"8080"};
    CHECK(s.serving_port(r) == 8080);
    r.ports = {"8000-8010"};
    CHECK_FALSE(s.serving_port(r));
    r.ports = {"8080", "9090"};
    CHECK_FALSE(s.serving_port(r));
    s.port = 7000;
    CHECK(s.serving_port(r) == 7000);
    r.ports.clear();
    CHECK(s.serving_port(r) == 7000);

    auto spec = load_ok("service:\n  readiness_probe: /\nresources:\n  ports: 8000\nrun: x\n");
    CHECK(spec.service->serving_port(spec.resources) == 8000);
    auto both = load_ok("service:\n  ports: 9000\nresources:\n  ports: [8000, 8001]\nrun: x\n");
    CHECK(both.service->serving_port(both.resources) == 9000);
}

TEST_CASE("the redacted spec shows the service with header names but no header value") {
    TlsDir dir;
    auto spec = load_ok("service:\n"
                        "  readiness_probe:\n"
                        "    path: /v1/models\n"
                        "    post_data: {model: m}\n"
                        "    headers: {Authorization: Bearer s3cr3t-t0ken}\n"
                        "  replica_policy: {min_replicas: 1, max_replicas: 3, target_qps_per_replica: 4}\n"
                        "  ports: 8080\n"
                        "  load_balancing_policy: least_load\n"
                        "  tls: {keyfile: certs/svc.key, certfile: certs/svc.crt}\n"
                        "run: x\n",
                        dir.path());
    const auto j = to_redacted_json(spec);
    CHECK(j.dump().find("s3cr3t") == std::string::npos);
    const auto& svc = j.at("service");
    CHECK(svc["readiness_probe"]["path"] == "/v1/models");
    CHECK(svc["readiness_probe"]["initial_delay_seconds"] == 1200);
    CHECK(svc["readiness_probe"]["timeout_seconds"] == 15);
    CHECK(svc["readiness_probe"]["post_data"] == nlohmann::json{{"model", "m"}});
    CHECK(svc["readiness_probe"]["headers"] == nlohmann::json{{"Authorization", "<redacted>"}});
    CHECK(svc["replica_policy"]["min_replicas"] == 1);
    CHECK(svc["replica_policy"]["max_replicas"] == 3);
    CHECK(svc["replica_policy"]["target_qps_per_replica"] == 4.0);
    CHECK(svc["replica_policy"]["upscale_delay_seconds"] == 300);
    CHECK(svc["replica_policy"]["downscale_delay_seconds"] == 1200);
    CHECK(svc["ports"] == 8080);
    CHECK(svc["load_balancing_policy"] == "least_load");
    CHECK(svc["tls"]["keyfile"] == spec.service->tls->first);
    CHECK(svc["tls"]["certfile"] == spec.service->tls->second);

    auto fixed = to_redacted_json(load_ok("service:\n  replicas: 2\nrun: x\n"));
    CHECK(fixed["service"]["replicas"] == 2);
    CHECK_FALSE(fixed["service"].contains("replica_policy"));
    CHECK_FALSE(to_redacted_json(load_ok("run: x\n")).contains("service"));
}

TEST_CASE("every problem of a service section is reported at once") {
    auto errs = errors_of("service:\n"
                          "  readiness_probe: health\n"
                          "  ports: 0\n"
                          "  load_balancing_policy: fastest\n"
                          "  replica_policy: {min_replicas: 2, max_replicas: 1}\n"
                          "run: x\n");
    CHECK(errs.size() == 4);
    CHECK(contains(errs, "task.yaml:2:20: service.readiness_probe:"));
    CHECK(contains(errs, "task.yaml:3:10: service.ports:"));
    CHECK(contains(errs, "task.yaml:4:26: service.load_balancing_policy:"));
    CHECK(contains(errs, "service.replica_policy.max_replicas: must be at least min_replicas (2)"));
}
