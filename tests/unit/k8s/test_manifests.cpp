// The Kubernetes manifests of a task: Job shape per server version, GPU requests, the environment, secrets
// by reference only, pod_config merging, names, and the container command run for real through bash after
// Kubernetes' own $(VAR) expansion.

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sys/wait.h>

#include "backends/k8s/labels.hpp"
#include "backends/k8s/manifests.hpp"

using namespace tandem;
using namespace tandem::k8s;
using nlohmann::json;

namespace {

TaskSpec spec_with(std::string run) {
    TaskSpec spec;
    spec.name = "train";
    spec.run = std::move(run);
    return spec;
}

JobPlan plan_for(int nodes, bool indexed) {
    JobPlan p;
    p.tandem_id = 42;
    p.base_name = "train-42-ab12c";
    p.submit_token = "ab12c";
    p.namespace_name = "ml";
    p.image = "ubuntu:22.04";
    p.num_nodes = nodes;
    p.indexed = indexed;
    return p;
}

Manifests render(const TaskSpec& spec, const JobPlan& plan, bool mask = false) {
    auto m = render_manifests(spec, plan, mask);
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m);
    return *m;
}

const json& container(const json& job) {
    return job["spec"]["template"]["spec"]["containers"][0];
}

std::optional<json> env_entry(const json& job, const std::string& name) {
    for (const auto& e : container(job)["env"]) {
        if (e["name"] == name) {
            return e;
        }
    }
    return std::nullopt;
}

// The kubelet's expansion of env values, command and args: $$ -> $, $(NAME) -> NAME's value when NAME
// was defined earlier, anything else as written.
std::string expand(const std::string& in, const std::map<std::string, std::string>& vars) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '$' || i + 1 >= in.size()) {
            out += in[i];
        } else if (in[i + 1] == '$') {
            out += '$';
            ++i;
        } else if (in[i + 1] == '(') {
            const auto close = in.find(')', i + 2);
            const auto name = close == std::string::npos ? std::string() : in.substr(i + 2, close - i - 2);
            if (auto it = vars.find(name); it != vars.end()) {
                out += it->second;
                i = close;
            } else {
                out += in[i];
            }
        } else {
            out += in[i];
        }
    }
    return out;
}

// Runs the container's command + args with its literal env as the kubelet would; returns stdout.
std::string run_container(const json& job, int* exit_code) {
    const json& c = container(job);
    std::map<std::string, std::string> vars;
    std::vector<std::string> env_strings;
    for (const auto& e : c["env"]) {
        if (e.contains("value")) {
            const auto v = expand(e["value"].get<std::string>(), vars);
            vars[e["name"]] = v;
            env_strings.push_back(e["name"].get<std::string>() + "=" + v);
        }
    }
    env_strings.push_back("PATH=/usr/bin:/bin");
    std::vector<std::string> argv;
    for (const auto& a : c["command"]) {
        argv.push_back(expand(a.get<std::string>(), vars));
    }
    for (const auto& a : c["args"]) {
        argv.push_back(expand(a.get<std::string>(), vars));
    }
    char out_template[] = "/tmp/tandem-k8s-manifest-XXXXXX";
    const int fd = mkstemp(out_template);
    REQUIRE(fd >= 0);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        std::vector<char*> args;
        for (auto& a : argv) {
            args.push_back(a.data());
        }
        args.push_back(nullptr);
        std::vector<char*> envp;
        for (auto& e : env_strings) {
            envp.push_back(e.data());
        }
        envp.push_back(nullptr);
        execve(args[0], args.data(), envp.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(fd);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(out_template);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(out_template);
    return text;
}

} // namespace

TEST_CASE("k8s manifests: a single-node job is one Job with restartPolicy Never and tandem's labels") {
    auto spec = spec_with("echo hi");
    auto m = render(spec, plan_for(1, true));
    REQUIRE(m.jobs.size() == 1);
    CHECK_FALSE(m.service);
    CHECK_FALSE(m.secret);
    const auto& job = m.jobs[0];
    CHECK(job["apiVersion"] == "batch/v1");
    CHECK(job["kind"] == "Job");
    CHECK(job["metadata"]["name"] == "train-42-ab12c");
    CHECK(job["metadata"]["namespace"] == "ml");
    CHECK(job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tandem");
    CHECK(job["metadata"]["labels"]["tandem.dev/job"] == "train-42-ab12c");
    CHECK(job["metadata"]["labels"]["tandem.dev/id"] == "42");
    CHECK(job["metadata"]["labels"]["tandem.dev/submit-token"] == "ab12c");
    CHECK(job["spec"]["backoffLimit"] == 0);
    spec.kubernetes.backoff_limit = 2;
    CHECK(render(spec, plan_for(1, true)).jobs[0]["spec"]["backoffLimit"] == 2);
    CHECK_FALSE(job["spec"].contains("completionMode"));
    CHECK(job["spec"]["template"]["spec"]["restartPolicy"] == "Never");
    CHECK(job["spec"]["template"]["metadata"]["labels"]["tandem.dev/job"] == "train-42-ab12c");
    CHECK(container(job)["image"] == "ubuntu:22.04");
    CHECK(env_entry(job, "TANDEM_NODE_RANK").value()["value"] == "0");
    CHECK(env_entry(job, "TANDEM_NODE_IPS").value()["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP");
}

TEST_CASE(
    "k8s manifests: num_nodes > 1 is an Indexed Job with a headless Service where the server has them") {
    auto m = render(spec_with("hostname"), plan_for(3, true));
    REQUIRE(m.jobs.size() == 1);
    const auto& job = m.jobs[0];
    CHECK(job["spec"]["completionMode"] == "Indexed");
    CHECK(job["spec"]["completions"] == 3);
    CHECK(job["spec"]["parallelism"] == 3);
    CHECK(job["spec"]["template"]["spec"]["subdomain"] == "train-42-ab12c");
    CHECK(env_entry(job, "TANDEM_NODE_RANK").value()["valueFrom"]["fieldRef"]["fieldPath"] ==
          "metadata.annotations['batch.kubernetes.io/job-completion-index']");
    CHECK(
        env_entry(job, "TANDEM_NODE_IPS").value()["value"] ==
        "train-42-ab12c-0.train-42-ab12c\ntrain-42-ab12c-1.train-42-ab12c\ntrain-42-ab12c-2.train-42-ab12c");
    REQUIRE(m.service);
    CHECK((*m.service)["spec"]["clusterIP"] == "None");
    CHECK((*m.service)["spec"]["selector"]["tandem.dev/job"] == "train-42-ab12c");
    CHECK((*m.service)["metadata"]["name"] == "train-42-ab12c");
}

TEST_CASE("k8s manifests: without Indexed Jobs, one single-pod Job per rank shares the Service") {
    auto m = render(spec_with("hostname"), plan_for(2, false));
    REQUIRE(m.jobs.size() == 2);
    for (int r = 0; r < 2; ++r) {
        const auto& job = m.jobs[static_cast<std::size_t>(r)];
        CHECK(job["metadata"]["name"] == fmt::format("train-42-ab12c-r{}", r));
        CHECK(job["metadata"]["labels"]["tandem.dev/rank"] == std::to_string(r));
        CHECK(job["metadata"]["labels"]["tandem.dev/job"] == "train-42-ab12c");
        CHECK_FALSE(job["spec"].contains("completionMode"));
        CHECK(job["spec"]["template"]["spec"]["hostname"] == fmt::format("train-42-ab12c-{}", r));
        CHECK(job["spec"]["template"]["spec"]["subdomain"] == "train-42-ab12c");
        CHECK(env_entry(job, "TANDEM_NODE_RANK").value()["value"] == std::to_string(r));
        CHECK(env_entry(job, "SKYPILOT_NODE_RANK").value()["value"] == std::to_string(r));
    }
    CHECK(m.service);
}

TEST_CASE("k8s manifests: secrets live in a Secret the Job references, never in the Job") {
    auto spec = spec_with("echo");
    spec.secrets = {{"HF_TOKEN", "hf_s3cr3t"}};
    auto m = render(spec, plan_for(1, true));
    REQUIRE(m.secret);
    CHECK((*m.secret)["stringData"]["HF_TOKEN"] == "hf_s3cr3t");
    CHECK((*m.secret)["metadata"]["name"] == "train-42-ab12c-secrets");
    CHECK(m.jobs[0].dump().find("hf_s3cr3t") == std::string::npos);
    auto ref = env_entry(m.jobs[0], "HF_TOKEN").value();
    CHECK(ref["valueFrom"]["secretKeyRef"]["name"] == "train-42-ab12c-secrets");
    CHECK(ref["valueFrom"]["secretKeyRef"]["key"] == "HF_TOKEN");

    auto masked = render(spec, plan_for(1, true), true);
    CHECK(to_yaml(masked).find("hf_s3cr3t") == std::string::npos);
    CHECK(to_yaml(masked).find("<redacted>") != std::string::npos);

    spec.secrets = {{"bad key!", "x"}};
    auto refused = render_manifests(spec, plan_for(1, true), false);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message ==
          "k8s: secrets.bad key!: not a valid Secret key (letters, digits, '-', '_', '.')");
}

TEST_CASE("k8s manifests: SkyPilot's remote_identity, custom_metadata, pod limits and priority class") {
    auto plan = plan_for(1, true);
    plan.cpus = 2;
    plan.memory_gb = 4;
    plan.limits_factor = 1.5;
    plan.service_account = "trainer";
    plan.priority_class = "high";
    auto spec = spec_with("echo");
    spec.kubernetes.custom_metadata = {{"labels", {{"team", "ml"}, {"tandem.dev/job", "not-ours"}}},
                                       {"annotations", {{"owner", "alice"}}}};
    auto m = render(spec, plan);
    const auto& c = container(m.jobs[0]);
    CHECK(c["resources"]["limits"]["cpu"] == "3");
    CHECK(c["resources"]["limits"]["memory"] == "6Gi");
    const auto& pod = m.jobs[0]["spec"]["template"];
    CHECK(pod["spec"]["serviceAccountName"] == "trainer");
    CHECK(pod["spec"]["priorityClassName"] == "high");
    CHECK(pod["metadata"]["labels"]["team"] == "ml");
    CHECK(pod["metadata"]["annotations"]["owner"] == "alice");
    CHECK(m.jobs[0]["metadata"]["labels"]["team"] == "ml");
    CHECK(m.jobs[0]["metadata"]["labels"]["tandem.dev/job"] == "train-42-ab12c"); // tandem's own labels win

    CHECK(service_account_for(nlohmann::json("sa"), "ctx") == "sa");
    CHECK(service_account_for(nlohmann::json{{"ctx", "sa-ctx"}, {"other", "x"}}, "ctx") == "sa-ctx");
    CHECK(service_account_for(nlohmann::json{{"other", "x"}}, "ctx").empty());
    for (const char* skypilot : {"LOCAL_CREDENTIALS", "SERVICE_ACCOUNT", "NO_UPLOAD"}) {
        CHECK(service_account_for(nlohmann::json(skypilot), "ctx").empty());
    }
    CHECK(service_account_for(nlohmann::json(), "ctx").empty());
}

TEST_CASE("k8s manifests: a git workdir is cloned in the pod before setup, into a folder per rank") {
    auto spec = spec_with("cat version.txt");
    spec.git_workdir = GitWorkdir{"https://example.com/org/repo.git", "v1"};
    auto m = render(spec, plan_for(2, true));
    const auto& c = container(m.jobs[0]);
    const std::string program = c["command"][2].get<std::string>();
    CHECK(program.find("tandem_git_checkout()") != std::string::npos);
    CHECK(program.find("tandem_git_checkout \"$$TANDEM_GIT_DIR/rank-$$TANDEM_NODE_RANK\" || exit $$?") !=
          std::string::npos);
    CHECK(env_entry(m.jobs[0], "TANDEM_GIT_URL").value()["value"] == "https://example.com/org/repo.git");
    CHECK(env_entry(m.jobs[0], "TANDEM_GIT_REF").value()["value"] == "v1");
    CHECK(env_entry(m.jobs[0], "TANDEM_GIT_DIR").value()["value"] == "/tmp/tandem-workdir-train-42-ab12c");
    auto plain = render(spec_with("x"), plan_for(1, true));
    CHECK(container(plain.jobs[0])["command"][2].get<std::string>().find("git") == std::string::npos);
}

TEST_CASE("k8s manifests: GPUs as limits, with the product nodeSelector and the GPU toleration") {
    auto plan = plan_for(1, true);
    plan.gpu = GpuRequest{"nvidia.com/gpu", 2, "NVIDIA-H100-80GB-HBM3"};
    plan.cpus = 4.5;
    plan.memory_gb = 16;
    plan.memory_exact = true; // `memory: 16` (not 16+): also the limit
    auto spec = spec_with("nvidia-smi");
    auto m = render(spec, plan);
    const auto& c = container(m.jobs[0]);
    CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "2");
    CHECK(c["resources"]["requests"]["cpu"] == "4500m");
    CHECK(c["resources"]["requests"]["memory"] == "16Gi");
    CHECK(c["resources"]["limits"]["memory"] == "16Gi");
    const auto& pod = m.jobs[0]["spec"]["template"]["spec"];
    const auto& terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                           ["nodeSelectorTerms"];
    REQUIRE(terms.size() == 4);
    CHECK(terms[0]["matchExpressions"][0]["key"] == "nvidia.com/gpu.product");
    CHECK(terms[0]["matchExpressions"][0]["operator"] == "In");
    CHECK(terms[0]["matchExpressions"][0]["values"][0] == "NVIDIA-H100-80GB-HBM3");
    CHECK(terms[1]["matchExpressions"][0]["key"] == "cloud.google.com/gke-accelerator");
    CHECK(pod["tolerations"][0]["key"] == "nvidia.com/gpu");
    CHECK(env_entry(m.jobs[0], "TANDEM_NUM_GPUS_PER_NODE").value()["value"] == "2");

    plan.memory_exact = false; // 16+: a floor, not a ceiling
    auto floor = render(spec, plan);
    CHECK_FALSE(container(floor.jobs[0])["resources"]["limits"].contains("memory"));
}

TEST_CASE("k8s manifests: a fraction of a GPU is the smallest MIG slice that holds it, else a shared GPU") {
    Pool mig;
    mig.name = "A100";
    mig.mig_profiles = {"3g.40gb", "1g.10gb", "7g.80gb", "2g.20gb"};
    auto r = choose_gpu_request({"A100", 0.1}, mig);
    REQUIRE(r);
    CHECK(r->resource == "nvidia.com/mig-1g.10gb");
    CHECK(r->count == 1);
    CHECK(choose_gpu_request({"A100", 0.4}, mig)->resource == "nvidia.com/mig-3g.40gb");
    CHECK(choose_gpu_request({"A100", 0.5}, mig)->resource == "nvidia.com/mig-7g.80gb");

    Pool shared;
    shared.time_sliced = true;
    CHECK(choose_gpu_request({"T4", 0.5}, shared)->resource == "nvidia.com/gpu.shared");
    CHECK_FALSE(choose_gpu_request({"T4", 0.5}, Pool{}));
    CHECK(choose_gpu_request({"H100", 8}, Pool{})->count == 8);
}

TEST_CASE("k8s manifests: pod_config merges into the pod, labels and queue reach the Job") {
    auto spec = spec_with("echo");
    spec.resources.labels = {{"team", "rl"}};
    spec.kubernetes.queue = "gpu-queue";
    spec.kubernetes.pod_config = json::parse(R"({
        "metadata": {"annotations": {"a": "b"}},
        "spec": {"priorityClassName": "high",
                 "tolerations": [{"key": "spot", "operator": "Exists"}],
                 "containers": [{"imagePullPolicy": "Always", "env": [{"name": "EXTRA", "value": "1"}]}]}})");
    auto plan = plan_for(1, true);
    plan.gpu = GpuRequest{"nvidia.com/gpu", 1, ""};
    auto m = render(spec, plan);
    const auto& job = m.jobs[0];
    CHECK(job["metadata"]["labels"]["team"] == "rl");
    CHECK(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue");
    const auto& tmpl = job["spec"]["template"];
    CHECK(tmpl["metadata"]["annotations"]["a"] == "b");
    CHECK(tmpl["metadata"]["labels"]["team"] == "rl");
    CHECK(tmpl["spec"]["priorityClassName"] == "high");
    CHECK(tmpl["spec"]["tolerations"].size() == 2);
    CHECK(container(job)["imagePullPolicy"] == "Always");
    CHECK(container(job)["env"].back()["name"] == "EXTRA");
    CHECK(container(job)["name"] == "main");

    spec.kubernetes.pod_config = json::parse(R"({"containers": []})");
    auto bad = render_manifests(spec, plan, false);
    REQUIRE_FALSE(bad);
    CHECK(
        bad.error().message ==
        "k8s: config.kubernetes.pod_config.containers: a Pod has no such field (expected metadata or spec)");
}

TEST_CASE("k8s manifests: the container command runs setup then run with values intact after expansion") {
    auto spec = spec_with("echo \"run:$GREETING:$(echo sub):$TANDEM_NODE_RANK:$TANDEM_NUM_NODES\"; exit 3");
    spec.setup = "echo 'setup $(HOME) $$ done'";
    spec.envs = {{"GREETING", "a $(HOME) b $$ c 'q' \"d\"\nline2"}};
    int code = 0;
    auto out = run_container(render(spec, plan_for(2, false)).jobs[1], &code);
    CHECK(code == 3);
    CHECK(out == "setup $(HOME) $$ done\nrun:a $(HOME) b $$ c 'q' \"d\"\nline2:sub:1:2\n");

    spec.setup = "exit 7";
    render(spec, plan_for(1, true));
    out = run_container(render(spec, plan_for(1, true)).jobs[0], &code);
    CHECK(code == 7);
    CHECK(out.empty());
}

TEST_CASE("k8s manifests: names are DNS labels that leave room for pod and host suffixes") {
    CHECK(job_base_name("Train_LLaMA 70B!", 7, "x1y2z") == "train-llama-70b-7-x1y2z");
    CHECK(job_base_name("42", 7, "x1y2z") == "t-42-7-x1y2z");
    CHECK(job_base_name("---", 7, "x1y2z") == "t-7-x1y2z");
    const auto long_name = job_base_name(std::string(100, 'a'), 123456, "x1y2z");
    CHECK(long_name.size() == 40);
    CHECK(long_name.substr(long_name.size() - 13) == "-123456-x1y2z");
}

TEST_CASE("k8s manifests: server versions decide Indexed Jobs and TTL") {
    auto v120 = parse_server_version(json{{"gitVersion", "v1.20.2"}, {"major", "1"}, {"minor", "20"}});
    REQUIRE(v120);
    CHECK_FALSE(v120->indexed_jobs());
    CHECK_FALSE(v120->ttl_after_finished());
    auto gke = parse_server_version(json{{"gitVersion", "v1.27.3-gke.100"}});
    REQUIRE(gke);
    CHECK(gke->indexed_jobs());
    CHECK(gke->ttl_after_finished());
    auto eks = parse_server_version(json{{"gitVersion", "weird"}, {"major", "1"}, {"minor", "22+"}});
    REQUIRE(eks);
    CHECK(eks->minor == 22);
    CHECK_FALSE(parse_server_version(json{{"gitVersion", "x"}}));
}

TEST_CASE("k8s manifests: plan output is multi-document YAML in creation order") {
    auto spec = spec_with("echo");
    spec.secrets = {{"T", "v"}};
    auto yaml = to_yaml(render(spec, plan_for(2, true), true));
    const auto secret = yaml.find("kind: \"Secret\"");
    const auto job = yaml.find("kind: \"Job\"");
    const auto service = yaml.find("kind: \"Service\"");
    CHECK(secret < job);
    CHECK(job < service);
    CHECK(service != std::string::npos);
    CHECK(yaml.rfind("---\n", 0) == 0);
}

TEST_CASE("k8s manifests: uploads add an init container on an emptyDir and pass the mounts as arguments") {
    auto spec = spec_with("cat \"$DEST/odd \\$(x) name/cfg.txt\" \"$DEST/dir/sub/b.txt\"");
    char tmpl[] = "/tmp/tandem-k8s-upload-XXXXXX";
    const std::string root = ::mkdtemp(tmpl);
    spec.envs = {{"DEST", root + "/dest"}};
    REQUIRE(std::system(fmt::format("mkdir -p {0}/m0 {0}/m1/sub && echo cfg > {0}/m0/cfg.txt && echo b > "
                                    "{0}/m1/sub/b.txt",
                                    root)
                            .c_str()) == 0);
    JobPlan plan = plan_for(1, true);
    PodUpload up;
    up.mounts.push_back({root + "/dest/odd $(x) name/cfg.txt", root + "/m0/cfg.txt", "cfg.txt"});
    up.mounts.push_back({root + "/dest/dir", root + "/m1", ""});
    up.wait_seconds = 77;
    plan.upload = up;
    auto m = render(spec, plan);
    const json& pod = m.jobs[0]["spec"]["template"]["spec"];
    REQUIRE(pod["initContainers"].size() == 1);
    const json& init = pod["initContainers"][0];
    CHECK(init["name"] == "tandem-upload");
    CHECK(init["image"] == "ubuntu:22.04");
    CHECK(init["args"] == json::array({"77"}));
    CHECK(init["volumeMounts"][0] == json({{"name", "tandem-files"}, {"mountPath", "/tandem"}}));
    CHECK(pod["volumes"][0] == json({{"name", "tandem-files"}, {"emptyDir", json::object()}}));
    CHECK(container(m.jobs[0])["volumeMounts"][0]["mountPath"] == "/tandem");
    // The destinations are arguments ($ escaped for the kubelet), never part of the program.
    const std::string program = container(m.jobs[0])["command"][2];
    CHECK(program.find("odd") == std::string::npos);
    CHECK(container(m.jobs[0])["args"][2] == "file");
    CHECK(container(m.jobs[0])["args"][4] == root + "/dest/odd $$(x) name/cfg.txt");
    int code = 0;
    auto out = run_container(m.jobs[0], &code);
    CHECK(code == 0);
    CHECK(out == "cfg\nb\n");

    // A workdir: the pod runs in /tandem/workdir, which does not exist here.
    up.workdir = true;
    plan.upload = up;
    out = run_container(render(spec, plan).jobs[0], &code);
    CHECK(code == 1);
    std::system(fmt::format("rm -rf {}", root).c_str());
}

TEST_CASE("k8s manifests: the identity is an annotation on the Job, the user and group are labels") {
    auto spec = spec_with("echo hi");
    auto plan = plan_for(1, true);
    plan.user = label_value("alice@example.com");
    plan.group_token = "grp12345";
    plan.identity = "tandem:1:t=ab12c;n=train;u=alice%40example.com";
    auto m = render(spec, plan);
    REQUIRE(m.jobs.size() == 1);
    const auto& job = m.jobs[0];
    CHECK(job["metadata"]["annotations"]["tandem.dev/identity"] == plan.identity);
    CHECK(job["metadata"]["labels"]["tandem.dev/user"] == "alice.example.com");
    CHECK(job["metadata"]["labels"]["tandem.dev/group"] == "grp12345");
    CHECK(job["spec"]["template"]["metadata"]["labels"]["tandem.dev/user"] == "alice.example.com");
    // A render (tandem plan) carries none of them.
    auto bare = render(spec, plan_for(1, true)).jobs[0];
    CHECK_FALSE(bare["metadata"].contains("annotations"));
    CHECK_FALSE(bare["metadata"]["labels"].contains("tandem.dev/user"));
}

TEST_CASE("k8s label values: 63 characters at most, alphanumeric at both ends") {
    CHECK(label_value("alice") == "alice");
    CHECK(label_value("system:serviceaccount:ml:runner") == "system.serviceaccount.ml.runner");
    CHECK(label_value("-_x_-") == "x");
    CHECK(label_value("") == "unknown");
    CHECK(label_value("@@@") == "unknown");
    CHECK(label_value(std::string(100, 'a')).size() == 63);
}

TEST_CASE("k8s manifests: job_recovery is the Job's backoffLimit and, from 1.26, a podFailurePolicy") {
    auto spec = spec_with("python train.py");
    auto plan = plan_for(1, true);
    JobRecovery recovery;
    recovery.max_restarts_on_errors = 3;
    recovery.recover_on_exit_codes = {7, 33};
    plan.recovery = recovery;
    auto job = render(spec, plan).jobs[0];
    CHECK(job["spec"]["backoffLimit"] == 3);
    CHECK_FALSE(job["spec"].contains("podFailurePolicy")); // the server has no podFailurePolicy
    CHECK(job["metadata"]["annotations"][std::string(k_recover_codes_annotation)] == "7,33");

    plan.pod_failure_policy = true;
    job = render(spec, plan).jobs[0];
    const auto& rules = job["spec"]["podFailurePolicy"]["rules"];
    REQUIRE(rules.size() == 2);
    // Disruptions first: an evicted pod whose container was killed with 143 is not judged by its code.
    const auto disruption =
        json::parse(R"({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]})");
    const auto codes = json::parse(
        R"({"action": "Ignore", "onExitCodes": {"containerName": "main", "operator": "In", "values": [7, 33]}})");
    CHECK(rules[0] == disruption);
    CHECK(rules[1] == codes);
    // config.kubernetes.backoff_limit still says how many retries the Job gets.
    spec.kubernetes.backoff_limit = 1;
    CHECK(render(spec, plan).jobs[0]["spec"]["backoffLimit"] == 1);

    // Without exit codes: the disruption rule alone, and no annotation.
    plan.recovery->recover_on_exit_codes.clear();
    job = render(spec, plan).jobs[0];
    CHECK(job["spec"]["podFailurePolicy"]["rules"].size() == 1);
    CHECK_FALSE(job["metadata"].contains("annotations"));
    // Multi-node, one Job per rank (no Indexed Jobs): each Job has the policy.
    auto per_rank = plan_for(2, false);
    per_rank.recovery = recovery;
    per_rank.pod_failure_policy = true;
    for (const auto& j : render(spec, per_rank).jobs) {
        CHECK(j["spec"]["podFailurePolicy"]["rules"].size() == 2);
        CHECK(j["spec"]["backoffLimit"] == 1);
    }
}

TEST_CASE("k8s manifests: a sweep is one Indexed Job whose pods read their element's values by index") {
    auto spec = spec_with("echo \"lr=$lr bs=$bs index=$TANDEM_SWEEP_INDEX of $SKYPILOT_NUM_JOBS\"");
    auto grid = sweep_grid({{"lr", {"0.1", "it's $HOME"}}, {"bs", {"8", "16", "32"}}});
    REQUIRE(grid);
    grid->parallel = 2;
    auto plan = plan_for(1, true);
    plan.sweep = *grid;
    auto m = render(spec, plan);
    REQUIRE(m.jobs.size() == 1);
    CHECK_FALSE(m.service);
    const json& job = m.jobs[0];
    CHECK(job["spec"]["completionMode"] == "Indexed");
    CHECK(job["spec"]["completions"] == 6);
    CHECK(job["spec"]["parallelism"] == 2);
    CHECK(job["spec"]["backoffLimit"] == 0);
    CHECK_FALSE(job["spec"].contains("backoffLimitPerIndex"));
    CHECK(job["metadata"]["annotations"][std::string(k_sweep_annotation)] == "6");
    auto index = env_entry(job, "TANDEM_SWEEP_INDEX");
    REQUIRE(index);
    CHECK((*index)["valueFrom"]["fieldRef"]["fieldPath"] ==
          fmt::format("metadata.annotations['{}']", k_completion_index_annotation));
    CHECK(env_entry(job, "TANDEM_NODE_RANK").value()["value"] == "0");

    // The pod of index 4 (lr="it's $HOME", bs=16), its index given as the kubelet resolves the fieldRef.
    json pod_job = job;
    for (auto& e : pod_job["spec"]["template"]["spec"]["containers"][0]["env"]) {
        if (e["name"] == "TANDEM_SWEEP_INDEX") {
            e = json{{"name", "TANDEM_SWEEP_INDEX"}, {"value", "4"}};
        }
    }
    int code = -1;
    CHECK(run_container(pod_job, &code) == "lr=it's $HOME bs=16 index=4 of 6\n");
    CHECK(code == 0);

    // Without a limit every element runs at once; from 1.29 each element has its own backoff.
    grid->parallel = 0;
    plan.sweep = *grid;
    plan.per_index_backoff = true;
    const json job2 = render(spec, plan).jobs[0];
    CHECK(job2["spec"]["parallelism"] == 6);
    CHECK(job2["spec"]["backoffLimitPerIndex"] == 0);
    CHECK_FALSE(job2["spec"].contains("backoffLimit"));
}

TEST_CASE("k8s manifests: a sweep of multi-node elements, or too large for one Job, is refused") {
    auto spec = spec_with("true");
    auto plan = plan_for(2, true);
    plan.sweep = sweep_ranks(3).value();
    auto refused = render_manifests(spec, plan, false);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("either a node rank or a sweep element"));

    std::vector<std::vector<std::pair<std::string, std::string>>> elements;
    for (int i = 0; i < 100; ++i) {
        elements.push_back({{"v", std::string(4000, 'a')}});
    }
    plan = plan_for(1, true);
    plan.sweep = sweep_elements(elements).value();
    refused = render_manifests(spec, plan, false);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("more than one Kubernetes Job carries"));
}

TEST_CASE("k8s manifests: server versions decide per-index backoff for sweeps") {
    CHECK_FALSE((ServerFeatures{1, 28}).backoff_limit_per_index());
    CHECK((ServerFeatures{1, 29}).backoff_limit_per_index());
    CHECK_FALSE((ServerFeatures{1, 21}).indexed_jobs());
}
