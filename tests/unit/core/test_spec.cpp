#include <map>

#include <catch2/catch.hpp>

#include "core/spec_loader.hpp"
#include "sys/files.hpp"

using namespace tandem;

namespace {

SpecLoad load(const std::string& yaml, const SpecOverrides& overrides = {},
              std::map<std::string, std::string> env = {}) {
    LoadOptions options;
    options.files = tandem::sys::real_files();
    options.base_dir = "/tmp";
    options.getenv = [env](const std::string& k) -> std::optional<std::string> {
        auto it = env.find(k);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    return load_spec(yaml, "task.yaml", overrides, options);
}

TaskSpec load_ok(const std::string& yaml, const SpecOverrides& overrides = {}) {
    auto r = load(yaml, overrides);
    INFO(format_diagnostics(r.diagnostics));
    REQUIRE(r.spec);
    return *r.spec;
}

std::vector<std::string> errors_of(const std::string& yaml, const SpecOverrides& overrides = {}) {
    auto r = load(yaml, overrides);
    CHECK_FALSE(r.spec);
    std::vector<std::string> out;
    for (const auto& d : r.diagnostics) {
        out.push_back(format_diagnostic(d));
    }
    return out;
}

bool contains(const std::vector<std::string>& lines, const std::string& needle) {
    for (const auto& l : lines) {
        if (l.find(needle) != std::string::npos) {
            return true;
        }
    }
    return false;
}

} // namespace

TEST_CASE("a minimal task loads with defaults") {
    auto spec = load_ok("run: echo hi\n");
    CHECK(spec.name == "task"); // from the file name
    CHECK(spec.num_nodes == 1);
    CHECK(spec.run == "echo hi");
    CHECK(spec.setup.empty());
    CHECK(spec.resources.accelerators.empty());
    REQUIRE(spec.options().size() == 1);
    CHECK(spec.options()[0].label == "(no accelerator)");
}

TEST_CASE("every accelerator form is accepted") {
    SECTION("NAME:COUNT") {
        auto s = load_ok("resources: {accelerators: 'H100:8'}\nrun: x\n");
        REQUIRE(s.resources.accelerators.size() == 1);
        CHECK(s.resources.accelerators[0].name == "H100");
        CHECK(s.resources.accelerators[0].count == 8);
    }
    SECTION("NAME alone means one") {
        auto s = load_ok("resources:\n  accelerators: H100\nrun: x\n");
        CHECK(s.resources.accelerators[0].count == 1);
    }
    SECTION("{NAME: COUNT}") {
        auto s = load_ok("resources:\n  accelerators: {A100-80GB: 4}\nrun: x\n");
        CHECK(s.resources.accelerators[0].name == "A100-80GB");
        CHECK(s.resources.accelerators[0].count == 4);
    }
    SECTION("a list is an ordered preference") {
        auto s = load_ok("resources:\n  accelerators: ['H100:8', 'A100:8', {V100: 8}]\nrun: x\n");
        REQUIRE(s.resources.accelerators.size() == 3);
        CHECK(s.resources.accelerators_ordered);
        auto options = s.options();
        REQUIRE(options.size() == 3);
        CHECK(options[0].tier < options[1].tier);
        CHECK(options[1].tier < options[2].tier);
        CHECK(options[2].label == "V100:8");
    }
    SECTION("a set is any of them") {
        auto s = load_ok("resources:\n  accelerators: {A100: 1, V100: 1}\nrun: x\n");
        CHECK_FALSE(s.resources.accelerators_ordered);
        auto options = s.options();
        REQUIRE(options.size() == 2);
        CHECK(options[0].tier == options[1].tier);
    }
    SECTION("a YAML set (null values) is any of them, one each") {
        auto s = load_ok("resources:\n  accelerators: {A100, V100}\nrun: x\n");
        REQUIRE(s.resources.accelerators.size() == 2);
        CHECK(s.resources.accelerators[1].count == 1);
    }
    SECTION("fractional") {
        auto s = load_ok("resources: {accelerators: 'A100:0.5'}\nrun: x\n");
        CHECK(s.resources.accelerators[0].fractional());
        CHECK(s.resources.accelerators[0].count == 0.5);
    }
}

TEST_CASE("bad accelerator strings are errors with the position of the value") {
    for (const char* bad : {"H100:0", "H100:-1", "H100:x", "H100:8:2", ":8", "H100:1.5", "'H 100'"}) {
        INFO(bad);
        auto errs = errors_of(std::string("resources:\n  accelerators: ") + bad + "\nrun: x\n");
        REQUIRE(errs.size() == 1);
        CHECK(errs[0].rfind("task.yaml:2:17: resources.accelerators: ", 0) == 0);
    }
}

TEST_CASE("cpus and memory take N, N+ and units") {
    auto s = load_ok("resources:\n  cpus: 4+\n  memory: 64GB\nrun: x\n");
    CHECK(s.resources.cpus->value == 4);
    CHECK(s.resources.cpus->at_least);
    CHECK(s.resources.memory_gb->value == 64);
    CHECK_FALSE(s.resources.memory_gb->at_least);
    auto t = load_ok("resources:\n  cpus: 8\n  memory: 512MB+\n  disk_size: 256\nrun: x\n");
    CHECK_FALSE(t.resources.cpus->at_least);
    CHECK(t.resources.memory_gb->value == Approx(0.5));
    CHECK(t.resources.memory_gb->at_least);
    CHECK(*t.resources.disk_size_gb == 256);
    auto errs = errors_of("resources:\n  cpus: many\n  memory: 64XB\n  disk_size: 10+\nrun: x\n");
    CHECK(errs.size() == 3);
    CHECK(contains(errs, "task.yaml:2:9: resources.cpus:"));
    CHECK(contains(errs, "task.yaml:3:11: resources.memory:"));
    CHECK(contains(errs, "unknown unit"));
}

TEST_CASE("infra pins, ports, labels, use_spot and image_id parse") {
    auto s = load_ok("resources:\n  infra: slurm/cluster-a/gpu\n  ports: [8080, '9000-9010']\n"
                     "  labels: {team: rl}\n  use_spot: false\n  image_id: docker:pytorch/pytorch\nrun: x\n");
    REQUIRE(s.resources.infra);
    CHECK(s.resources.infra->kind == "slurm");
    CHECK(s.resources.infra->cluster == "cluster-a");
    CHECK(s.resources.infra->pool == "gpu");
    CHECK(s.resources.ports == std::vector<std::string>{"8080", "9000-9010"});
    CHECK(s.resources.labels.at("team") == "rl");
    CHECK(*s.resources.use_spot == false);
    auto k = load_ok("resources: {infra: 'kubernetes/arn:aws:eks:us-east-1:1:cluster/prod'}\nrun: x\n");
    CHECK(k.resources.infra->kind == "k8s");
    CHECK(k.resources.infra->cluster == "arn:aws:eks:us-east-1:1:cluster/prod");
    auto legacy = load_ok("resources: {cloud: kubernetes, region: my-ctx}\nrun: x\n");
    CHECK(legacy.resources.infra->kind == "k8s");
    CHECK(legacy.resources.infra->cluster == "my-ctx");
    auto errs = errors_of("resources:\n  infra: aws/us-east-1\n  ports: 70000\nrun: x\n");
    CHECK(errs.size() == 2);
    CHECK(contains(errs, "task.yaml:2:3: resources.infra: infra 'aws/us-east-1' names a cloud"));
    CHECK(contains(errors_of("resources: {infra: nowhere}\nrun: x\n"), "infra 'nowhere' is not supported"));
    CHECK(contains(errs, "'70000' is not a port"));
}

TEST_CASE("image_id: null means no image, also in an alternative over a base image (llm/gpt-2)") {
    auto s = load_ok("resources:\n  image_id: docker:nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04\n  any_of:\n"
                     "    - {infra: slurm, image_id: null}\n    - {infra: k8s}\nrun: x\n");
    REQUIRE(s.alternatives.size() == 2);
    CHECK_FALSE(s.alternatives[0].image_id);
    CHECK(s.alternatives[1].image_id == "docker:nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04");
    auto top = load_ok("resources:\n  image_id: null\nrun: x\n");
    CHECK_FALSE(top.resources.image_id);
}

TEST_CASE("any_of and ordered merge over the base resources") {
    auto s =
        load_ok("resources:\n  cpus: 8\n  any_of:\n    - accelerators: H100:8\n    - accelerators: A100:8\n"
                "      cpus: 16\nrun: x\n");
    REQUIRE(s.alternatives.size() == 2);
    CHECK_FALSE(s.alternatives_ordered);
    CHECK(s.alternatives[0].cpus->value == 8);  // inherited
    CHECK(s.alternatives[1].cpus->value == 16); // overridden
    auto options = s.options();
    REQUIRE(options.size() == 2);
    CHECK(options[0].tier == options[1].tier);
    CHECK(options[1].label == "any_of[1] A100:8");

    auto o = load_ok(
        "resources:\n  ordered:\n    - {infra: slurm, accelerators: H100:8}\n    - {infra: k8s}\nrun: x\n");
    CHECK(o.alternatives_ordered);
    auto oo = o.options();
    REQUIRE(oo.size() == 2);
    CHECK(oo[0].tier < oo[1].tier);
    CHECK(oo[1].resources.accelerators.empty()); // entries overlay the base, not each other
    auto errs = errors_of("resources:\n  any_of: [{cpus: 1}]\n  ordered: [{cpus: 2}]\nrun: x\n");
    CHECK(contains(errs, "resources.ordered: cannot be combined with resources.any_of"));
}

TEST_CASE("config.slurm and config.kubernetes are read") {
    auto s = load_ok(
        "config:\n  slurm: {partition: gpu, account: ml, qos: high, constraint: h100, time: '1-00:00:00'}\n"
        "  kubernetes:\n    namespace: team\n    queue: q\n    pod_config:\n      spec:\n"
        "        priorityClassName: high\n        containers: [{resources: {limits: {memory: 1Gi}}}]\n"
        "run: x\n");
    CHECK(*s.slurm.partition == "gpu");
    CHECK(*s.slurm.time == "1-00:00:00");
    CHECK(*s.kubernetes.namespace_name == "team");
    CHECK(s.kubernetes.pod_config["spec"]["priorityClassName"] == "high");
    auto errs = errors_of("config:\n  slurm: {time: forever, partion: x}\nrun: x\n");
    CHECK(errs.size() == 2);
    CHECK(contains(errs, "config.slurm.time: 'forever' is not a Slurm time"));
    CHECK(contains(errs, "config.slurm.partion: unknown field (did you mean 'partition'?)"));

    CHECK(*load_ok("config:\n  kubernetes: {backoff_limit: 3}\nrun: x\n").kubernetes.backoff_limit == 3);
    CHECK(*load_ok("config:\n  kubernetes: {backoff_limit: 0}\nrun: x\n").kubernetes.backoff_limit == 0);
    CHECK(!load_ok("run: x\n").kubernetes.backoff_limit);
    auto bad = errors_of("config:\n  kubernetes:\n    backoff_limit: -1\nrun: x\n");
    REQUIRE(bad.size() == 1);
    CHECK(bad[0] ==
          "task.yaml:3:20: config.kubernetes.backoff_limit: must be a whole number of retries, 0 or more");
}

TEST_CASE("unknown keys get did-you-mean, cloud-only fields a precise message") {
    auto errs =
        errors_of("nmae: x\nresources:\n  acelerators: H100:8\n  instance_type: p4d.24xlarge\nrun: x\n");
    REQUIRE(errs.size() == 3);
    CHECK(contains(errs, "task.yaml:1:1: nmae: unknown field (did you mean 'name'?)"));
    CHECK(
        contains(errs, "task.yaml:3:3: resources.acelerators: unknown field (did you mean 'accelerators'?)"));
    CHECK(contains(errs, "task.yaml:4:3: resources.instance_type: instance_type 'p4d.24xlarge' is a cloud "
                         "instance type"));
    auto far = errors_of("completely_unrelated: 1\nrun: x\n");
    REQUIRE(far.size() == 1);
    CHECK(far[0] == "task.yaml:1:1: completely_unrelated: unknown field");
}

TEST_CASE("every problem is reported at once") {
    auto errs = errors_of("num_nodes: 0\nresources:\n  accelerators: H100:x\n  cpus: -1\nenvs:\n  1BAD: v\n"
                          "file_mounts: [1]\n");
    CHECK(errs.size() == 6); // num_nodes, accelerators, cpus, env name, file_mounts type, no run/setup
    CHECK(contains(errs, "task.yaml:1:12: num_nodes: must be at least 1"));
    CHECK(contains(errs, "run: the task needs `run` or `setup`"));
}

TEST_CASE("wrong types are reported with the value's position") {
    auto errs = errors_of("name: [a, b]\nnum_nodes: abc\nresources: 5\nenvs: [A]\nrun: x\n");
    CHECK(errs.size() == 4);
    CHECK(contains(errs, "task.yaml:1:7: name: must be a single value, not a list"));
    CHECK(contains(errs, "task.yaml:2:12: num_nodes: 'abc' is not a whole number"));
    CHECK(contains(errs, "task.yaml:3:12: resources: must be a mapping"));
    CHECK(contains(errs, "task.yaml:4:7: envs: must be a mapping"));
}

TEST_CASE("malformed YAML, multiple documents, empty files") {
    auto bad = errors_of("run: [echo\n");
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].find("invalid YAML") != std::string::npos);
    CHECK(bad[0].rfind("task.yaml:", 0) == 0);
    auto multi = errors_of("run: a\n---\nrun: b\n");
    REQUIRE(multi.size() == 1);
    CHECK(multi[0].find("several YAML documents") != std::string::npos);
    CHECK(multi[0].rfind("task.yaml:3:1:", 0) == 0);
    CHECK(contains(errors_of(""), "the task file is empty"));
    CHECK(contains(errors_of("- a\n- b\n"), "a task must be a mapping"));
    CHECK(contains(errors_of("run: a\nrun: b\n"), "task.yaml:2:1: run: duplicate key"));
}

TEST_CASE("hostile documents are rejected without a crash") {
    SECTION("deep nesting") {
        std::string deep =
            "run: x\nconfig:\n  kubernetes:\n    pod_config: " + std::string(100000, '[') + "\n";
        auto errs = errors_of(deep);
        CHECK_FALSE(errs.empty());
    }
    SECTION("an alias bomb under pod_config") {
        std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
        // Built as a separate document key would be unknown; put the bomb where free-form YAML is allowed.
        std::string doc =
            "run: x\nconfig:\n  kubernetes:\n    pod_config:\n      l0: &l0 [x, x, x, x, x, x, x, x, x]\n";
        for (int i = 1; i < 9; ++i) {
            doc += "      l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
            for (int k = 0; k < 9; ++k) {
                doc += (k ? ", *l" : "*l") + std::to_string(i - 1);
            }
            doc += "]\n";
        }
        auto errs = errors_of(doc);
        REQUIRE(errs.size() == 1);
        CHECK(errs[0].find("config.kubernetes.pod_config: is too large") != std::string::npos);
        (void)bomb;
    }
}

TEST_CASE("envs and secrets: values, nulls and overrides") {
    SpecOverrides o;
    o.envs = {"A=over", "FROM_HERE", "NEW=1"};
    o.secrets = {"TOKEN=tok-123"};
    auto r = load("envs:\n  A: file\n  B: 'quotes \" and $HOME'\n  EMPTY:\nsecrets:\n  TOKEN:\nrun: x\n"
                  "envs_unused_check: 1\n",
                  o, {{"FROM_HERE", "copied"}});
    // The stray key is an error; every other problem was satisfied by overrides.
    REQUIRE(r.diagnostics.size() == 2);
    CHECK(format_diagnostic(r.diagnostics[0]).find("envs_unused_check") != std::string::npos);
    CHECK(format_diagnostic(r.diagnostics[1]) ==
          "task.yaml:4:3: envs.EMPTY: has no value; pass --env EMPTY=VALUE");

    auto ok = load("envs:\n  A: file\n  B: 'quotes \" and $HOME'\nsecrets:\n  TOKEN:\nrun: x\n", o,
                   {{"FROM_HERE", "copied"}});
    INFO(format_diagnostics(ok.diagnostics));
    REQUIRE(ok.spec);
    std::map<std::string, std::string> env(ok.spec->envs.begin(), ok.spec->envs.end());
    CHECK(env.at("A") == "over");
    CHECK(env.at("B") == "quotes \" and $HOME");
    CHECK(env.at("FROM_HERE") == "copied");
    CHECK(env.at("NEW") == "1");
    REQUIRE(ok.spec->secrets.size() == 1);
    CHECK(ok.spec->secrets[0].second == "tok-123");

    SpecOverrides missing;
    missing.envs = {"NOT_SET_ANYWHERE"};
    auto errs = errors_of("run: x\n", missing);
    REQUIRE(errs.size() == 1);
    CHECK(errs[0] ==
          "--env: envs.NOT_SET_ANYWHERE: is not set in the local environment (use K=V to give a value)");
}

TEST_CASE("the redacted spec keeps secret names, never values") {
    SpecOverrides o;
    o.secrets = {"EXTRA=extra-secret-value"};
    auto s = load_ok("secrets:\n  TOKEN: hunter2-secret\nenvs:\n  PLAIN: visible\nrun: x\n", o);
    auto text = to_redacted_json(s).dump();
    CHECK(text.find("hunter2-secret") == std::string::npos);
    CHECK(text.find("extra-secret-value") == std::string::npos);
    CHECK(text.find("TOKEN") != std::string::npos);
    CHECK(text.find("visible") != std::string::npos);
}

TEST_CASE("resource overrides apply to the base and every alternative") {
    SpecOverrides o;
    o.gpus = "A100:2";
    o.cpus = "16+";
    o.memory = "32GB";
    o.num_nodes = "3";
    o.infra = "slurm";
    o.name = "renamed";
    auto s = load_ok("resources:\n  accelerators: H100:8\n  any_of: [{cpus: 2}, {memory: 8}]\nrun: x\n", o);
    CHECK(s.name == "renamed");
    CHECK(s.num_nodes == 3);
    for (const auto& opt : s.options()) {
        REQUIRE(opt.resources.accelerators.size() == 1);
        CHECK(opt.resources.accelerators[0].name == "A100");
        CHECK(opt.resources.cpus->value == 16);
        CHECK(opt.resources.memory_gb->value == 32);
        CHECK(opt.resources.infra->kind == "slurm");
    }
    SpecOverrides bad;
    bad.gpus = "H100:zero";
    bad.num_nodes = "-2";
    auto errs = errors_of("run: x\n", bad);
    CHECK(errs.size() == 2);
    CHECK(contains(errs, "--gpus: resources.accelerators:"));
    CHECK(contains(errs, "--num-nodes: num_nodes: must be at least 1"));
}

TEST_CASE("a large run script loads") {
    std::string big = "run: |\n";
    for (int i = 0; i < 25000; ++i) {
        big += "  echo line " + std::to_string(i) + " padding padding padding padding\n";
    }
    REQUIRE(big.size() > 1'000'000);
    auto s = load_ok(big);
    CHECK(s.run.size() > 900'000);
}

TEST_CASE("workdir must be an existing directory") {
    auto s = load_ok("workdir: .\nrun: x\n");
    CHECK(*s.workdir == "/tmp");
    auto errs = errors_of("workdir: /definitely/not/here\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0] == "task.yaml:1:1: workdir: '/definitely/not/here' is not a directory");
}

TEST_CASE("a git workdir: url and ref, checked before anything runs") {
    auto s = load_ok("workdir:\n  url: https://github.com/org/repo.git\n  ref: v1.2\nrun: x\n");
    REQUIRE(s.git_workdir);
    CHECK(s.git_workdir->url == "https://github.com/org/repo.git");
    CHECK(s.git_workdir->ref == "v1.2");
    CHECK_FALSE(s.workdir);
    for (const char* url : {"git@github.com:org/repo.git", "ssh://git@host:22/org/repo", "file:///srv/repo",
                            "git://127.0.0.1:9418/repo"}) {
        INFO(url);
        CHECK(load_ok(std::string("workdir: {url: '") + url + "'}\nrun: x\n").git_workdir->ref.empty());
    }
    CHECK(contains(errors_of("workdir: {ref: main}\nrun: x\n"), "workdir.url: a git workdir needs url"));
    CHECK(contains(errors_of("workdir: {url: '-oProxyCommand=x'}\nrun: x\n"), "is not a git URL"));
    CHECK(contains(errors_of("workdir: {url: 'not a url'}\nrun: x\n"), "is not a git URL"));
    CHECK(contains(errors_of("workdir: {url: /local/path}\nrun: x\n"), "is not a git URL"));
    // A credential in the URL would be stored and shown: refused, and not echoed back.
    auto leak = errors_of("workdir: {url: 'https://bob:ghp_s3cr3t@github.com/org/repo'}\nrun: x\n");
    CHECK(contains(leak, "workdir.url: has a password or token in it; give the token in GIT_TOKEN"));
    for (const auto& line : leak) {
        CHECK(line.find("ghp_s3cr3t") == std::string::npos);
    }
    CHECK(load_ok("workdir: {url: 'ssh://git@host/org/repo'}\nrun: x\n").git_workdir);
    for (const char* ref : {"-x", "a..b", "a b", "x.lock", "a:b", "a~1", "/a"}) {
        INFO(ref);
        CHECK(contains(errors_of(std::string("workdir: {url: 'https://h/r', ref: '") + ref + "'}\nrun: x\n"),
                       "is not a branch, tag or commit name"));
    }
    CHECK(contains(errors_of("workdir: {url: 'https://h/r', branch: x}\nrun: x\n"),
                   "workdir.branch: unknown field"));
}

TEST_CASE("accelerator sets as SkyPilot writes them: flow-style NAME:COUNT keys") {
    auto flow = load_ok("resources:\n  accelerators: {A100-80GB:4, H100:8}\nrun: x\n");
    REQUIRE(flow.resources.accelerators.size() == 2);
    CHECK_FALSE(flow.resources.accelerators_ordered);
    CHECK(flow.resources.accelerators[0].name == "A100-80GB");
    CHECK(flow.resources.accelerators[0].count == 4);
    CHECK(flow.resources.accelerators[1].count == 8);
    auto quoted = load_ok("resources:\n  accelerators: {'A100:1', 'V100:1'}\nrun: x\n");
    REQUIRE(quoted.resources.accelerators.size() == 2);
    CHECK(quoted.resources.accelerators[1].name == "V100");
    CHECK(
        contains(errors_of("resources:\n  accelerators: {'A100:1': 2}\nrun: x\n"), "not {NAME:COUNT: ...}"));
    CHECK(contains(errors_of("resources:\n  accelerators: H100:1\n  gpus: H100:1\nrun: x\n"),
                   "both accelerators and gpus"));
}

TEST_CASE("cloud alternatives are rejections, and only a task with nothing left is refused") {
    auto s = load_ok("resources:\n  any_of:\n    - {infra: aws, accelerators: H100:8}\n"
                     "    - {infra: k8s, accelerators: H100:1}\nrun: x\n");
    REQUIRE(s.alternatives.size() == 2);
    CHECK(s.alternatives[0].cloud_only.count("infra") == 1);
    CHECK(s.alternatives[1].cloud_only.empty());
    // A base pinned to a cloud is replaced by an alternative's own place.
    auto based = load_ok("resources:\n  cloud: aws\n  ordered:\n    - {infra: slurm}\nrun: x\n");
    CHECK(based.alternatives[0].cloud_only.empty());
    auto errs = errors_of("resources:\n  instance_type: m5.large\n  any_of:\n    - {cpus: 2}\n"
                          "    - {infra: gcp}\nrun: x\n");
    CHECK(contains(errs, "task.yaml:2:3: resources.instance_type: instance_type 'm5.large' is a cloud"));
    CHECK(contains(errs, "resources.any_of[1].infra: infra 'gcp' names a cloud"));
}

TEST_CASE("SkyPilot's keys are never unknown: honoured, noted as ignored, or refused with the reason") {
    auto s = load_ok("resources:\n  disk_tier: best\n  autostop: {down: true}\n  priority: 3\n"
                     "inputs: {s3://b: 1}\nconfig:\n  gcp: {vpc_name: x}\n"
                     "  kubernetes: {provision_timeout: -1, remote_identity: {ctx-a: sa-a}}\n"
                     "  slurm: {provision_timeout: 2m, sbatch_options: {t: '1:00:00', exclusive: null, "
                     "mail-type: END}}\nrun: x\n");
    CHECK(s.resources.hints.at("disk_tier") == "best");
    CHECK(s.resources.hints.at("autostop") == nlohmann::json{{"down", true}});
    REQUIRE(s.notes.size() == 2);
    CHECK(s.notes[0].field == "inputs");
    CHECK(s.notes[1].field == "config.gcp");
    CHECK(s.notes[1].loc.line == 7);
    CHECK(s.kubernetes.provision_timeout_seconds == -1);
    CHECK(s.kubernetes.remote_identity == nlohmann::json{{"ctx-a", "sa-a"}});
    CHECK(s.slurm.provision_timeout_seconds == 120);
    CHECK(s.slurm.time == "1:00:00"); // folded from sbatch_options
    CHECK(s.slurm.sbatch_options ==
          std::vector<std::pair<std::string, std::string>>{{"exclusive", ""}, {"mail-type", "END"}});
    auto errs = errors_of("pool: {workers: 2}\nconfig:\n  kubernetes: {networking: nodeport}\n"
                          "  slurm: {sbatch_options: {output: x.log}}\nrun: x\n");
    CHECK(contains(errs, "task.yaml:1:1: pool: is a SkyPilot feature tandem does not support yet"));
    CHECK(contains(errs, "config.kubernetes.networking: is a SkyPilot global setting"));
    CHECK(contains(errs, "config.slurm.sbatch_options.output: --output is set by tandem from the task"));
}

TEST_CASE("closest_match finds near names only") {
    std::vector<std::string_view> keys{"accelerators", "cpus", "memory"};
    CHECK(closest_match("acelerators", keys) == std::optional<std::string>("accelerators"));
    CHECK(closest_match("cpu", keys) == std::optional<std::string>("cpus"));
    CHECK_FALSE(closest_match("zzzzzz", keys));
}

TEST_CASE("job_recovery: SkyPilot's shorthand and mapping, with exit codes as a number or a list") {
    auto s = load_ok("resources:\n  job_recovery: FAILOVER\nrun: x\n");
    REQUIRE(s.resources.job_recovery);
    CHECK(s.resources.job_recovery->strategy == "FAILOVER");
    CHECK(s.resources.job_recovery->max_restarts_on_errors == 0);
    CHECK_FALSE(s.resources.job_recovery->disabled);
    CHECK(load_ok("resources:\n  job_recovery: none\nrun: x\n").resources.job_recovery->disabled);
    s = load_ok("resources:\n  job_recovery:\n    strategy: null\n    max_restarts_on_errors: 3\n"
                "    recover_on_exit_codes: [34, 33, 33]\nrun: x\n");
    CHECK(s.resources.job_recovery->max_restarts_on_errors == 3);
    CHECK(s.resources.job_recovery->recover_on_exit_codes == std::vector<int>{33, 34});
    s = load_ok("resources:\n  spot_recovery: {recover_on_exit_codes: 7}\nrun: x\n");
    CHECK(s.resources.job_recovery->recover_on_exit_codes == std::vector<int>{7});
    CHECK_FALSE(load_ok("resources:\n  cpus: 1\nrun: x\n").resources.job_recovery);
}

TEST_CASE("job_recovery: a bad value is one error naming the field and where it is") {
    auto errs = errors_of("resources:\n  job_recovery:\n    max_restarts_on_errors: -1\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("task.yaml:3:29") != std::string::npos);
    CHECK(errs[0].find("resources.job_recovery.max_restarts_on_errors") != std::string::npos);
    errs = errors_of("resources:\n  job_recovery:\n    recover_on_exit_codes: [3, 300]\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("resources.job_recovery.recover_on_exit_codes[1]") != std::string::npos);
    CHECK(errs[0].find("0 to 255") != std::string::npos);
    errs = errors_of("resources:\n  job_recovery:\n    recover_on_exit_codes: 0\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("0 is success") != std::string::npos);
    errs = errors_of("resources:\n  job_recovery:\n    max_restart_on_errors: 2\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("max_restarts_on_errors") != std::string::npos); // did you mean
    errs = errors_of("resources:\n  job_recovery: [1]\nrun: x\n");
    REQUIRE(errs.size() == 1);
    CHECK(errs[0].find("a strategy name or a mapping") != std::string::npos);
}
