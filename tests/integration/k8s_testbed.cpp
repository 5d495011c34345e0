#include "k8s_testbed.hpp"

#include <atomic>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace tandem_test {

namespace {

std::string testbed_script() {
    return std::string(TANDEM_SOURCE_DIR) + "/scripts/testbed/k8s";
}

} // namespace

const std::map<std::string, std::string>& k8s_env() {
    static const std::map<std::string, std::string> env = [] {
        std::map<std::string, std::string> out;
        auto r = run({testbed_script(), "env"}, RunOptions{{}, "", 30s, "", {}});
        if (r.exit_code != 0) {
            return out;
        }
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            auto eq = line.find('=');
            if (eq == std::string::npos) {
                continue;
            }
            std::string value = line.substr(eq + 1);
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
                value = value.substr(1, value.size() - 2);
            }
            out[line.substr(0, eq)] = value;
        }
        return out;
    }();
    INFO("the Kubernetes testbed is not running: start it with `" << testbed_script()
                                                                  << " up` (scripts/test and .ci/run do)");
    REQUIRE(env.count("K8S_KUBECONFIG") == 1);
    return env;
}

std::string k8s_setting(const std::string& key) {
    const auto& env = k8s_env();
    auto it = env.find(key);
    INFO("scripts/testbed/k8s env has no " << key);
    REQUIRE(it != env.end());
    return it->second;
}

int k8s_minor() {
    const std::string v = k8s_setting("K8S_VERSION"); // "v1.26.1"
    const auto dot = v.find('.');
    REQUIRE(dot != std::string::npos);
    return std::stoi(v.substr(dot + 1));
}

void k8s_testbed(const std::vector<std::string>& args, bool required) {
    std::vector<std::string> argv{testbed_script()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv, RunOptions{{}, "", 240s, "", {}});
    INFO(r);
    INFO(
        "stop-api and start-api wait for the testbed's lock; a `scripts/testbed/k8s build` or `up` holds it");
    if (required) {
        REQUIRE(r.exit_code == 0);
    } else {
        CHECK(r.exit_code == 0);
    }
}

std::string unique_name(const std::string& prefix) {
    static std::atomic<int> counter{0};
    return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

RunResult kubectl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    std::vector<std::string> argv{"/usr/bin/kubectl", "--kubeconfig", k8s_setting("K8S_KUBECONFIG"), "-n",
                                  k8s_setting("K8S_NAMESPACE")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.timeout = timeout;
    return run(argv, options);
}

nlohmann::json objects_of(const std::string& kind, const std::string& base) {
    auto r = kubectl({"get", kind, "-l", "tandem.dev/job=" + base, "-o", "json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE(j.is_object());
    return j.value("items", nlohmann::json::array());
}

std::vector<std::string> wait_all_gone(const std::string& base, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<std::string> left;
    do {
        left.clear();
        for (const char* kind : {"jobs", "pods", "services", "secrets"}) {
            if (!objects_of(kind, base).empty()) {
                left.emplace_back(kind);
            }
        }
        if (left.empty()) {
            break;
        }
        std::this_thread::sleep_for(500ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return left;
}

K8sHome::K8sHome(const std::string& kubeconfig, const std::string& context, const std::string& extra) {
    std::string config = "clusters:\n"
                         "  - name: lab\n"
                         "    type: kubernetes\n"
                         "    discover_jobs: false\n"
                         "    kubeconfig: " +
                         (kubeconfig.empty() ? k8s_setting("K8S_KUBECONFIG") : kubeconfig) +
                         "\n"
                         "    namespace: " +
                         k8s_setting("K8S_NAMESPACE") + "\n";
    if (!context.empty()) {
        config += "    context: " + context + "\n";
    }
    home.write_config(config + extra);
    options.env = home.base_env();
}

K8sHome::~K8sHome() {
    // No REQUIRE here: a destructor must not throw, and a failed cleanup only leaves finished objects.
    auto r = home.tandem({"status", "--all", "--json", "--no-refresh"}, options);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_object()) {
        return;
    }
    std::string bases;
    for (const auto& job : j.value("jobs", nlohmann::json::array())) {
        const auto remote = job.value("remote_id", std::string());
        if (const auto slash = remote.find('/'); slash != std::string::npos) {
            bases += (bases.empty() ? "" : ",") + remote.substr(slash + 1);
        }
    }
    const auto& env = k8s_env();
    if (bases.empty() || !env.count("K8S_KUBECONFIG") || !env.count("K8S_NAMESPACE")) {
        return;
    }
    run({"/usr/bin/kubectl", "--kubeconfig", env.at("K8S_KUBECONFIG"), "-n", env.at("K8S_NAMESPACE"),
         "delete", "jobs,services,secrets", "-l", "tandem.dev/job in (" + bases + ")", "--cascade=background",
         "--wait=false"},
        RunOptions{{}, "", 30s, "", {}});
}

RunResult K8sHome::tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const {
    RunOptions o = options;
    o.timeout = timeout;
    return home.tandem(args, o);
}

Child K8sHome::start(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const {
    RunOptions o = options;
    o.timeout = timeout;
    return home.start_tandem(args, o);
}

nlohmann::json K8sHome::job(int id) const {
    auto r = tandem({"status", std::to_string(id), "--json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["jobs"].size() == 1);
    return j["jobs"][0];
}

nlohmann::json K8sHome::wait_state(int id, const std::string& state, std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < deadline) {
        j = job(id);
        const auto now = j["state"].get<std::string>();
        if (now == state || is_terminal_state(now)) {
            return j;
        }
        std::this_thread::sleep_for(300ms);
    }
    return j;
}

nlohmann::json K8sHome::wait_terminal(int id, std::chrono::milliseconds limit) const {
    return wait_state(id, "SUCCEEDED", limit);
}

std::string K8sHome::task(const std::string& name, const std::string& yaml) const {
    return home.write(name + ".yaml", yaml);
}

int K8sHome::launch_detached(const std::string& file, const std::vector<std::string>& extra) const {
    std::vector<std::string> args{"launch", "-d", file};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = tandem(args);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return std::stoi(r.out);
}

std::string K8sHome::base_of(int id) const {
    const auto remote = job(id)["remote_id"].get<std::string>();
    return remote.substr(remote.find('/') + 1);
}

} // namespace tandem_test
