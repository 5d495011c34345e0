#pragma once
// Integration tests against the real Kubernetes testbed (scripts/testbed/k8s): kube-apiserver, the
// controller manager and the scheduler v1.20, with a node agent that runs pods as local processes. The
// testbed must be up; when it is not, every test fails with how to start it (a failure, never a skip).

#include <map>
#include <string>
#include <vector>

#include "../cli/run_tandem.hpp"

namespace tandem_test {

// KEY=VALUE lines of `scripts/testbed/k8s env`, read once; fails the test when the testbed is down.
const std::map<std::string, std::string>& k8s_env();
std::string k8s_setting(const std::string& key);
// The testbed's Kubernetes minor version (K8S_VERSION v1.26.1 -> 26): what tandem makes depends on it
// (Indexed Jobs from 1.22, autoscaling/v2 from 1.23).
int k8s_minor();
// Runs the testbed script with `args` (e.g. {"stop-api"}); fails the test if it fails (and, when
// `required`, stops it: pass false where throwing is not allowed, as in a destructor).
void k8s_testbed(const std::vector<std::string>& args, bool required = true);

// A job name no other test (or earlier run) uses: "<prefix>-<pid>-<n>".
std::string unique_name(const std::string& prefix);

// kubectl as the testbed's admin in the test namespace; `args` after `kubectl -n NS`.
RunResult kubectl(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 60s);
// `kubectl get KIND -l tandem.dev/job=BASE -o json`'s items (KIND: jobs, pods, services, secrets).
nlohmann::json objects_of(const std::string& kind, const std::string& base);

// A TempHome whose config.yaml has one `type: kubernetes` cluster `lab` reading `kubeconfig` (context
// `context` when not empty) in the testbed's namespace; `extra` lines are added to the cluster's entry.
struct K8sHome {
    TempHome home;
    RunOptions options;
    explicit K8sHome(const std::string& kubeconfig = "", const std::string& context = "",
                     const std::string& extra = "");
    // Deletes what every job of this home left in the cluster (finished Jobs stay: v1.20 has no TTL).
    ~K8sHome();
    K8sHome(const K8sHome&) = delete;
    K8sHome& operator=(const K8sHome&) = delete;
    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const;
    Child start(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const;
    nlohmann::json job(int id) const;
    // Polls status until the job reaches `state` (or any terminal state) or `limit` passes.
    nlohmann::json wait_state(int id, const std::string& state, std::chrono::milliseconds limit = 90s) const;
    nlohmann::json wait_terminal(int id, std::chrono::milliseconds limit = 90s) const;
    std::string task(const std::string& name, const std::string& yaml) const; // writes a task file
    // `launch -d` of `file` (plus `extra` arguments); the new job's id.
    int launch_detached(const std::string& file, const std::vector<std::string>& extra = {}) const;
    // The remote base name (the tandem.dev/job label) of job `id`.
    std::string base_of(int id) const;
};

// Waits until no Job, pod, Service or Secret of `base` is left; the kinds still there when `limit` passed.
std::vector<std::string> wait_all_gone(const std::string& base, std::chrono::milliseconds limit = 60s);

} // namespace tandem_test
