// Runs the rendered sbatch script with bash on this machine, with `srun` and `scontrol` replaced by
// shims on PATH: srun starts the per-node command once per fake node (SLURM_NODEID 0 and 1, in
// parallel, exit code = the highest), scontrol expands the fake node list. This proves the quoting and
// the per-node logic without a cluster: environment values and the user's setup/run arrive byte-exact
// (the user's text is compared with $BASH_EXECUTION_STRING, what `bash -c` actually ran), and the rank
// variables are right on both nodes.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pwd.h>
#include <sstream>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include "backends/slurm/sbatch_script.hpp"
#include "slurm_plans.hpp"

using namespace tandem;
using namespace tandem::slurm;
namespace fs = std::filesystem;

namespace {

constexpr const char* k_fake_srun = R"(#!/bin/bash
opts=()
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do opts+=("$1"); shift; done
printf '%s\n' "${opts[@]}" > "$OUT/srun_options"
pids=()
for ((i = 0; i < SLURM_JOB_NUM_NODES; i++)); do
    SLURM_NODEID=$i SLURM_PROCID=$i SLURMD_NODENAME=node$((i + 1)) "$@" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p"; r=$?; [ "$r" -gt "$rc" ] && rc=$r; done
exit "$rc"
)";

// node1's NodeAddr is an address, node2's a name this machine resolves (localhost).
constexpr const char* k_fake_scontrol = R"(#!/bin/bash
case "$*" in
"show hostnames node[1-2]") printf 'node1\nnode2\n' ;;
"-o show node node[1-2]")
    printf 'NodeName=node2 Arch=x86_64 CoresPerSocket=1 NodeAddr=localhost NodeHostName=node2\n'
    printf 'NodeName=node1 Arch=x86_64 CoresPerSocket=1 NodeAddr=10.0.0.7 NodeHostName=node1\n' ;;
*) echo "fake scontrol: unexpected $*" >&2; exit 1 ;;
esac
)";

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void write(const fs::path& p, const std::string& text, bool executable = false) {
    std::ofstream(p, std::ios::binary) << text;
    if (executable) {
        fs::permissions(p, fs::perms::owner_all);
    }
}

struct Sandbox {
    fs::path root;
    fs::path out;

    Sandbox() {
        std::string tmpl = (fs::temp_directory_path() / "tandem-slurm-XXXXXX").string();
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        root = tmpl;
        out = root / "out";
        fs::create_directories(out);
        fs::create_directories(root / "bin");
        write(root / "bin" / "srun", k_fake_srun, true);
        write(root / "bin" / "scontrol", k_fake_scontrol, true);
    }
    ~Sandbox() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;

    // Runs `bash script` as the batch step of a 2-node job; `job_env` is what the submit payload adds
    // (secrets included). Returns the exit code.
    int run(const std::string& script, const std::vector<std::pair<std::string, std::string>>& job_env) {
        write(root / "job.sh", script);
        std::vector<std::string> env{
            "PATH=" + (root / "bin").string() + ":/usr/bin:/bin",
            "HOME=" + root.string(),
            "USER=tester",
            "SLURM_JOB_ID=77",
            "SLURM_JOB_NUM_NODES=2",
            "SLURM_JOB_NODELIST=node[1-2]",
            "SLURM_NODEID=0",
            "OUT=" + out.string(),
        };
        for (const auto& [k, v] : job_env) {
            env.push_back(k + "=" + v);
        }
        std::vector<char*> envp;
        for (auto& e : env) {
            envp.push_back(e.data());
        }
        envp.push_back(nullptr);
        const std::string script_path = (root / "job.sh").string();
        const std::string log = (root / "job.log").string();
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            if (FILE* f = std::freopen(log.c_str(), "w", stdout)) {
                dup2(fileno(f), STDERR_FILENO);
            }
            if (chdir(root.c_str()) != 0) {
                _exit(126);
            }
            char* argv[] = {const_cast<char*>("bash"), const_cast<char*>(script_path.c_str()), nullptr};
            execve("/bin/bash", argv, envp.data());
            _exit(127);
        }
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        INFO(read(log));
        REQUIRE(WIFEXITED(status));
        return WEXITSTATUS(status);
    }

    std::string node_file(const std::string& name, int rank) const {
        const auto p = out / (name + "." + std::to_string(rank));
        INFO(p.string());
        REQUIRE(fs::exists(p));
        return read(p);
    }
};

// Environment values that break naive quoting.
const std::vector<std::pair<std::string, std::string>> k_env_corpus{
    {"PLAIN", "hello"},
    {"QUOTES", "it's \"double\" and 'single' and '\\''"},
    {"DOLLARS", "$HOME ${PATH} $(touch pwned) `touch pwned2` $((1+1)) $'\\n'"},
    {"BACKSLASHES", "back\\slash \\\\ \\n \\ trailing\\"},
    {"NEWLINES", "line1\nline2\n\n"},
    {"CRLF", "dos\r\nline\r\n"},
    {"SPACES", "  leading, inner  \t tab, trailing  "},
    {"EMPTY", ""},
    {"UNICODE", "h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac"},
    {"GLOBS", "* ? [a-z] ~ ~root {a,b}"},
    {"DASHES", "-n -e --"},
    {"OPERATORS", "; rm -rf nothing && false || true | cat > x < y & #"},
    {"HEREDOCISH", "EOF\nTANDEM_RUN_EOF\n<<'X'"},
    {"LONG", std::string(20000, 'z')},
};

// Dumps what a node sees; appended to every run text below.
std::string dump_program() {
    std::string s = "printf '%s' \"$BASH_EXECUTION_STRING\" > \"$OUT/run_text.$TANDEM_NODE_RANK\"\n";
    for (const auto& [name, value] : k_env_corpus) {
        s += "printf '%s' \"$" + name + "\" > \"$OUT/env_" + name + ".$TANDEM_NODE_RANK\"\n";
    }
    for (const char* v :
         {"TANDEM_JOB_ID", "TANDEM_JOB_NAME", "TANDEM_NODE_RANK", "TANDEM_NUM_NODES", "TANDEM_NODE_IPS",
          "TANDEM_NUM_GPUS_PER_NODE", "SKYPILOT_NODE_RANK", "SKYPILOT_NUM_NODES", "SKYPILOT_NODE_IPS",
          "SKYPILOT_NUM_GPUS_PER_NODE", "SKYPILOT_TASK_ID", "HF_TOKEN", "GREETING"}) {
        s += std::string("printf '%s' \"$") + v + "\" > \"$OUT/var_" + v + ".$TANDEM_NODE_RANK\"\n";
    }
    return s;
}

// A run text full of things a careless embedding would interpret.
std::string tricky_run(bool with_cr, const std::string& tail) {
    std::string s =
        "#!/bin/bash\n"
        "# 'quotes' \"doubles\" `backticks` $(subst) ${var} \\ EOF TANDEM_RUN_EOF TANDEM_SETUP_EOF\n"
        "set -u\n"
        "echo \"it's $(echo sub) `echo tick` rank=${TANDEM_NODE_RANK}\" > \"$OUT/tricky.$TANDEM_NODE_RANK\"\n"
        "cat <<EOF >> \"$OUT/tricky.$TANDEM_NODE_RANK\"\n"
        "expanded $TANDEM_NUM_NODES\n"
        "EOF\n"
        "cat <<'TANDEM_RUN_EOF' >> \"$OUT/tricky.$TANDEM_NODE_RANK\"\n"
        "literal $HOME `id`\n"
        "TANDEM_RUN_EOF\n"
        "cat <<-\tTANDEM_RUN_EOF_1 >> \"$OUT/tricky.$TANDEM_NODE_RANK\"\n"
        "\tindented\n"
        "\tTANDEM_RUN_EOF_1\n"
        "echo back\\\\slash 'single \\n' >> \"$OUT/tricky.$TANDEM_NODE_RANK\"\n"
        "x='multi\n"
        "line'\n"
        "printf '%s\\n' \"$x\" >> \"$OUT/tricky.$TANDEM_NODE_RANK\"\n";
    if (with_cr) {
        s += "echo crlf\r\n"; // bash passes the CR on as part of the word
        s += "printf '%s' 'cr inside\r' >> \"$OUT/tricky.$TANDEM_NODE_RANK\"\n";
    }
    return s + tail;
}

TaskSpec spec_for(std::string setup, std::string run) {
    TaskSpec spec;
    spec.name = "train";
    spec.setup = std::move(setup);
    spec.run = std::move(run);
    spec.secrets = {{"HF_TOKEN", "s3cr3t 'with' $quotes"}};
    return spec;
}

slurm::SubmitPlan plan_for(const fs::path& workdir) {
    auto plan = full_plan();
    plan.working_directory = workdir.string();
    plan.environment = k_env_corpus;
    plan.environment.emplace_back("GREETING", "hi");
    plan.environment.emplace_back("HF_TOKEN", "s3cr3t 'with' $quotes");
    return plan;
}

} // namespace

TEST_CASE("rendered script, run under fake srun on 2 nodes: env, texts and ranks arrive exactly") {
    for (const bool with_cr : {false, true}) {
        for (const std::string tail_newlines : {"", "\n", "\n\n\n"}) {
            INFO("CR in the text: " << with_cr << ", trailing newlines: " << tail_newlines.size());
            Sandbox box;
            const std::string setup =
                "printf '%s' \"$BASH_EXECUTION_STRING\" > \"$OUT/setup_text.$TANDEM_NODE_RANK\"\n"
                "echo 'TANDEM_SETUP_EOF' $'\\x27' \"$(echo ok)\"" +
                tail_newlines;
            std::string dump = dump_program();
            dump.pop_back(); // let the tail decide how the text ends
            const std::string run = tricky_run(with_cr, dump + tail_newlines);
            const auto spec = spec_for(setup, run);
            auto script = render_sbatch_script(spec, plan_for(box.root));
            REQUIRE(script);
            CHECK(script->find('\r') == std::string::npos);
            CHECK(script->find("s3cr3t") == std::string::npos);

            // The secret comes only from the job's environment, as the submit payload delivers it.
            REQUIRE(box.run(*script, {{"HF_TOKEN", "s3cr3t 'with' $quotes"}}) == 0);
            CHECK_FALSE(fs::exists(box.root / "pwned"));
            CHECK_FALSE(fs::exists(box.root / "pwned2"));

            for (int rank : {0, 1}) {
                INFO("rank " << rank);
                CHECK(box.node_file("setup_text", rank) == setup);
                CHECK(box.node_file("run_text", rank) == run);
                for (const auto& [name, value] : k_env_corpus) {
                    INFO(name);
                    CHECK(box.node_file("env_" + name, rank) == value);
                }
                CHECK(box.node_file("var_TANDEM_NODE_RANK", rank) == std::to_string(rank));
                CHECK(box.node_file("var_SKYPILOT_NODE_RANK", rank) == std::to_string(rank));
                CHECK(box.node_file("var_TANDEM_NUM_NODES", rank) == "2");
                CHECK(box.node_file("var_SKYPILOT_NUM_NODES", rank) == "2");
                CHECK(box.node_file("var_TANDEM_NODE_IPS", rank) == "10.0.0.7\n127.0.0.1");
                CHECK(box.node_file("var_SKYPILOT_NODE_IPS", rank) == "10.0.0.7\n127.0.0.1");
                CHECK(box.node_file("var_TANDEM_NUM_GPUS_PER_NODE", rank) == "8");
                CHECK(box.node_file("var_SKYPILOT_NUM_GPUS_PER_NODE", rank) == "8");
                CHECK(box.node_file("var_TANDEM_JOB_ID", rank) == "42");
                CHECK(box.node_file("var_TANDEM_JOB_NAME", rank) == "train");
                CHECK(box.node_file("var_SKYPILOT_TASK_ID", rank) == "tandem-42-train");
                CHECK(box.node_file("var_HF_TOKEN", rank) == "s3cr3t 'with' $quotes");
                CHECK(box.node_file("var_GREETING", rank) == "hi");
                std::string expected =
                    "it's sub tick rank=" + std::to_string(rank) +
                    "\nexpanded 2\nliteral $HOME `id`\nindented\nback\\slash single \\n\nmulti\nline\n";
                if (with_cr) {
                    expected += "cr inside\r";
                }
                CHECK(box.node_file("tricky", rank) == expected);
            }
            const std::string options = read(box.out / "srun_options");
            CHECK(options == "--export=ALL\n--nodes=2\n--ntasks=2\n--ntasks-per-node=1\n--cpus-per-task=16\n"
                             "--kill-on-bad-exit=0\n--label\n");
        }
    }
}

TEST_CASE("setup failing skips run and gives the job setup's exit code") {
    Sandbox box;
    const auto spec = spec_for("echo setting up; exit 4", "touch \"$OUT/ran.$TANDEM_NODE_RANK\"");
    auto script = render_sbatch_script(spec, plan_for(box.root));
    REQUIRE(script);
    CHECK(box.run(*script, {}) == 4);
    CHECK_FALSE(fs::exists(box.out / "ran.0"));
    CHECK_FALSE(fs::exists(box.out / "ran.1"));
}

TEST_CASE("the job's exit code is run's, and a failure on one node fails the job") {
    Sandbox box;
    const auto spec =
        spec_for("", "touch \"$OUT/ran.$TANDEM_NODE_RANK\"; [ \"$TANDEM_NODE_RANK\" = 1 ] && exit 3; exit 0");
    auto script = render_sbatch_script(spec, plan_for(box.root));
    REQUIRE(script);
    CHECK(box.run(*script, {}) == 3);
    CHECK(fs::exists(box.out / "ran.0")); // an empty setup does not stop run
    CHECK(fs::exists(box.out / "ran.1"));

    Sandbox ok;
    auto fine = render_sbatch_script(spec_for("true", "exit 0"), plan_for(ok.root));
    REQUIRE(fine);
    CHECK(ok.run(*fine, {}) == 0);
}

TEST_CASE("a job submitted over REST with a bare environment still gets PATH, USER and HOME") {
    Sandbox box;
    auto spec = spec_for("", "printf '%s|%s' \"$USER\" \"$HOME\" > \"$OUT/login\"");
    auto plan = minimal_plan();
    auto script = render_sbatch_script(spec, plan);
    REQUIRE(script);
    write(box.root / "job.sh", *script);
    // Like slurmrestd: only the submitted variables and Slurm's own, no USER or HOME.
    const std::string cmd =
        "cd " + box.root.string() + " && env -i PATH=" + (box.root / "bin").string() +
        ":/usr/bin:/bin SLURM_JOB_NUM_NODES=2 'SLURM_JOB_NODELIST=node[1-2]' OUT=" + box.out.string() +
        " /bin/bash job.sh > job.log 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const std::string login = read(box.out / "login");
    const auto bar = login.find('|');
    REQUIRE(bar != std::string::npos);
    const passwd* me = getpwuid(getuid());
    REQUIRE(me != nullptr);
    CHECK(login.substr(0, bar) == me->pw_name);
    CHECK(login.substr(bar + 1) == me->pw_dir); // from the passwd database
}
