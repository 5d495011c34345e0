// `tandem completion`: the scripts are valid and complete what they promise, run by a real bash.

#include <catch2/catch.hpp>

#include "store/job_store.hpp"

#include <filesystem>

#include "run_tandem.hpp"

using namespace tandem_test;

namespace {

// Runs the bash completion function for `line` (words; the last one is being completed) and returns
// COMPREPLY, one per line.
std::vector<std::string> complete_in_bash(const TempHome& t, const std::string& script_path,
                                          const std::vector<std::string>& words) {
    std::string array;
    for (const auto& w : words) {
        array += " '" + w + "'";
    }
    const std::string bin_dir = std::filesystem::path(tandem_bin()).parent_path().string();
    const std::string program = "export PATH=" + bin_dir + ":$PATH; source " + script_path + "; COMP_WORDS=(" +
                                array + "); COMP_CWORD=" + std::to_string(words.size() - 1) +
                                "; _tandem; printf '%s\\n' \"${COMPREPLY[@]}\"";
    RunOptions o;
    o.env = t.base_env();
    o.cwd = t.root();
    auto r = run({"/bin/bash", "-c", program}, o);
    INFO(r);
    REQUIRE(r.exit_code == 0);
    return split_lines(r.out);
}

bool has(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

TEST_CASE("completion: bash completes commands, flags, job ids, clusters and task files") {
    TempHome t;
    t.write_config("clusters:\n  - name: here\n    type: local\n  - name: gpu-lab\n    type: slurm\n"
                   "    rest: {url: \"http://127.0.0.1:1\", user: u, token_env: T}\n");
    auto script = t.tandem({"completion", "bash"});
    INFO(script);
    REQUIRE(script.exit_code == 0);
    CHECK(contains(script.out, "complete -F _tandem tandem"));
    CHECK_FALSE(contains(script.out, "__complete)")); // the helper is not offered as a command
    const std::string path = t.write("tandem.bash", script.out);
    REQUIRE(run({"/bin/bash", "-n", path}).exit_code == 0);

    auto commands = complete_in_bash(t, path, {"tandem", "s"});
    CHECK(commands == std::vector<std::string>{"status", "shell", "serve"});
    auto flags = complete_in_bash(t, path, {"tandem", "logs", "--n"});
    CHECK(flags == std::vector<std::string>{"--node"});
    auto clusters = complete_in_bash(t, path, {"tandem", "status", "--cluster", ""});
    CHECK(clusters == std::vector<std::string>{"here", "gpu-lab"});
    auto infra = complete_in_bash(t, path, {"tandem", "launch", "--infra", "sl"});
    CHECK(infra == std::vector<std::string>{"slurm", "slurm/gpu-lab"});

    t.write("tasks/train.yaml", "run: echo hi\n");
    t.write("tasks/notes.txt", "x");
    auto files = complete_in_bash(t, path, {"tandem", "launch", "tasks/"});
    CHECK(has(files, "tasks/train.yaml"));
    CHECK_FALSE(has(files, "tasks/notes.txt"));

    // Job ids come from the store (no network): two local jobs, newest first.
    auto task = t.write("hello.yaml", "name: hello\nrun: echo hi\n");
    RunOptions with_token;
    with_token.env["T"] = "x"; // gpu-lab's token_env
    REQUIRE(t.tandem({"launch", "--infra", "local", task}, with_token).exit_code == 0);
    REQUIRE(t.tandem({"launch", "--infra", "local", task}, with_token).exit_code == 0);
    auto jobs = complete_in_bash(t, path, {"tandem", "logs", ""});
    CHECK(jobs == std::vector<std::string>{"2", "1"});
    auto described = t.tandem({"__complete", "jobs", "--described"});
    CHECK(contains(described.out, "2\thello (SUCCEEDED)\n"));

    // serve: its subcommands, task files for up and update, service names from the store.
    CHECK(complete_in_bash(t, path, {"tandem", "serve", "u"}) == std::vector<std::string>{"up", "update"});
    CHECK(has(complete_in_bash(t, path, {"tandem", "serve", "up", "tasks/"}), "tasks/train.yaml"));
    {
        auto store = tandem::store::JobStore::open(t.state_dir() + "/jobs.db");
        REQUIRE(store);
        tandem::store::ServiceRecord service;
        service.name = "llm";
        service.cluster = "lab";
        service.backend = "kubernetes";
        service.spec_json = "{}";
        REQUIRE((*store)->insert_service(service).value());
    }
    CHECK(complete_in_bash(t, path, {"tandem", "serve", "logs", ""}) == std::vector<std::string>{"llm"});
    CHECK(complete_in_bash(t, path, {"tandem", "serve", "update", "l"}) == std::vector<std::string>{"llm"});
    CHECK(has(complete_in_bash(t, path, {"tandem", "serve", "update", "llm", "tasks/"}), "tasks/train.yaml"));
}

TEST_CASE("completion: zsh and fish scripts, and a clear error for another shell") {
    TempHome t;
    auto zsh = t.tandem({"completion", "zsh"});
    REQUIRE(zsh.exit_code == 0);
    CHECK(contains(zsh.out, "bashcompinit"));
    CHECK(zsh.out.rfind("#compdef tandem\n", 0) == 0); // also the installed $fpath file, vendor-completions/_tandem
    CHECK(contains(zsh.out, "complete -F _tandem tandem"));
    auto fish = t.tandem({"completion", "fish"});
    REQUIRE(fish.exit_code == 0);
    CHECK(contains(fish.out, "complete -c tandem -n __fish_use_subcommand -a exec -d"));
    CHECK(contains(fish.out, "complete -c tandem -n '__fish_seen_subcommand_from logs' -l node"));
    CHECK(contains(fish.out, "(tandem __complete jobs --described 2>/dev/null)"));
    auto other = t.tandem({"completion", "powershell"});
    CHECK(other.exit_code == 2);
    CHECK(contains(other.err, "tandem: error:"));
    auto help = t.tandem({"--help"});
    CHECK(contains(help.out, "completion"));
    CHECK_FALSE(contains(help.out, "__complete"));
}
