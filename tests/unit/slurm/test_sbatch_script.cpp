// Static checks of the rendered sbatch script: the #SBATCH lines (golden), how sbatch's own parser reads
// them back, and what must never be in the script.

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

#include <catch2/catch.hpp>

#include "backends/slurm/sbatch_script.hpp"
#include "slurm_plans.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {

TaskSpec spec_with(std::string setup, std::string run) {
    TaskSpec spec;
    spec.name = "train";
    spec.setup = std::move(setup);
    spec.run = std::move(run);
    spec.secrets = {{"HF_TOKEN", "s3cr3t"}};
    return spec;
}

std::string render(const TaskSpec& spec, const slurm::SubmitPlan& plan) {
    auto script = render_sbatch_script(spec, plan);
    INFO((script ? std::string() : script.error().message));
    REQUIRE(script);
    return *script;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

std::vector<std::string> sbatch_lines(const std::string& script) {
    std::vector<std::string> out;
    for (const auto& l : lines_of(script)) {
        if (l.rfind("#SBATCH", 0) == 0) {
            out.push_back(l);
        }
    }
    return out;
}

// sbatch's reading of one #SBATCH line (src/sbatch/opt.c, _get_argument, Slurm 22.05): words split on
// whitespace, '...' and "..." group, backslash escapes, an unquoted # ends the line.
std::vector<std::string> sbatch_words(std::string_view line) {
    std::vector<std::string> words;
    std::size_t i = std::string_view("#SBATCH").size();
    while (i < line.size()) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) {
            ++i;
        }
        if (i >= line.size()) {
            break;
        }
        std::string word;
        bool quoted = false;
        bool escape = false;
        char q = 0;
        for (; i < line.size() && (quoted || !std::isspace(static_cast<unsigned char>(line[i]))); ++i) {
            const char c = line[i];
            if (escape) {
                escape = false;
            } else if (c == '\\') {
                escape = true;
                continue;
            } else if (quoted) {
                if (c == q) {
                    quoted = false;
                    continue;
                }
            } else if (c == '"' || c == '\'') {
                quoted = true;
                q = c;
                continue;
            } else if (c == '#') { // a comment: the rest of the line is not read
                if (!word.empty()) {
                    words.push_back(word);
                }
                return words;
            }
            word += c;
        }
        REQUIRE_FALSE(quoted);
        words.push_back(word);
    }
    return words;
}

} // namespace

TEST_CASE("the #SBATCH lines of a full plan (golden)") {
    const auto script = render(spec_with("", "echo hi"), full_plan());
    CHECK(script.rfind("#!/bin/bash\n", 0) == 0);
    CHECK(sbatch_lines(script) == std::vector<std::string>{
                                      "#SBATCH --job-name=train",
                                      "#SBATCH --partition=gpu",
                                      "#SBATCH --nodes=2",
                                      "#SBATCH --ntasks-per-node=1",
                                      "#SBATCH --gres=gpu:h100:8",
                                      "#SBATCH --cpus-per-task=16",
                                      "#SBATCH --mem=65536M",
                                      "#SBATCH --tmp=102400M",
                                      "#SBATCH --time=1-04:05:00",
                                      "#SBATCH --account=lab",
                                      "#SBATCH --qos=normal",
                                      "#SBATCH --constraint=\"h100&ib\"",
                                      "#SBATCH --output=/home/u/.tandem/slurm/%j.out",
                                      "#SBATCH --error=/home/u/.tandem/slurm/%j.out",
                                      "#SBATCH --comment=tandem-7f3a9c",
                                      "#SBATCH --chdir=/home/u/project",
                                  });
}

TEST_CASE("the #SBATCH lines of a minimal plan leave out what is not set") {
    const auto script = render(spec_with("", "echo hi"), minimal_plan());
    CHECK(sbatch_lines(script) == std::vector<std::string>{
                                      "#SBATCH --job-name=hello",
                                      "#SBATCH --nodes=1",
                                      "#SBATCH --ntasks-per-node=1",
                                      "#SBATCH --time=0-00:10:00",
                                  });
    auto untyped = minimal_plan();
    untyped.gpus_per_node = 2;
    CHECK(render(spec_with("", "x"), untyped).find("#SBATCH --gres=gpu:2\n") != std::string::npos);
}

TEST_CASE("sbatch reads every #SBATCH line: they all come before the first command") {
    const auto lines = lines_of(render(spec_with("setup", "run"), full_plan()));
    bool in_body = false;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const bool comment = !lines[i].empty() && lines[i][0] == '#';
        if (!comment && !lines[i].empty()) {
            in_body = true;
        }
        if (in_body) {
            CHECK(lines[i].rfind("#SBATCH", 0) != 0);
        }
    }
}

TEST_CASE("awkward values survive sbatch's own parsing of the #SBATCH line") {
    auto plan = minimal_plan();
    plan.job_name = "my \"job\" #1 it's a\\b";
    plan.output_pattern = "/home/u/my jobs/%x-%j.out";
    plan.constraint.emplace("[rack1|rack2]&ib");
    plan.account.emplace("it's");
    const auto lines = sbatch_lines(render(spec_with("", "x"), plan));
    std::vector<std::string> words;
    for (const auto& l : lines) {
        const auto w = sbatch_words(l);
        REQUIRE(w.size() == 1);
        words.push_back(w.front());
    }
    CHECK(std::find(words.begin(), words.end(), "--job-name=my \"job\" #1 it's a\\b") != words.end());
    CHECK(std::find(words.begin(), words.end(), "--output=/home/u/my jobs/%x-%j.out") != words.end());
    CHECK(std::find(words.begin(), words.end(), "--constraint=[rack1|rack2]&ib") != words.end());
    CHECK(std::find(words.begin(), words.end(), "--account=it's") != words.end());
}

TEST_CASE("values no #SBATCH line can carry are refused, naming the option") {
    struct Case {
        const char* option;
        std::function<void(slurm::SubmitPlan&)> set;
    };
    for (const auto& c :
         {Case{"--job-name", [](auto& p) { p.job_name = "two\nlines"; }},
          Case{"--partition", [](auto& p) { p.partition = "gpu\r"; }},
          Case{"--account", [](auto& p) { p.account.emplace("a\nb"); }},
          Case{"--qos", [](auto& p) { p.qos.emplace(std::string("q\0x", 3)); }},
          Case{"--constraint", [](auto& p) { p.constraint.emplace("x\ny"); }},
          Case{"--output", [](auto& p) { p.output_pattern = "/tmp/a\n#SBATCH --x"; }},
          Case{"--comment", [](auto& p) { p.submit_token = "tok\n"; }},
          Case{"--chdir", [](auto& p) { p.working_directory = "/home/\n"; }},
          Case{"--job-name", [](auto& p) { p.job_name = "my-packjob"; }}, Case{"--gres", [](auto& p) {
                                                                                   p.gpus_per_node = 1;
                                                                                   p.gres_type = "h100\n";
                                                                               }}}) {
        INFO(c.option);
        auto plan = minimal_plan();
        c.set(plan);
        auto script = render_sbatch_script(spec_with("", "x"), plan);
        REQUIRE_FALSE(script);
        CHECK(script.error().kind == ErrorKind::invalid_spec);
        CHECK(script.error().message.find(c.option) != std::string::npos);
    }
}

TEST_CASE("no time asked: no --time line, and the script says which limit Slurm applies") {
    auto no_time = minimal_plan();
    no_time.time_limit_minutes.reset();
    no_time.time_limit_note = "none: the partition has no DefaultTime and its MaxTime is UNLIMITED";
    auto r = render_sbatch_script(spec_with("", "x"), no_time);
    REQUIRE(r);
    CHECK(r->find("#SBATCH --time") == std::string::npos);
    CHECK(r->find("# No --time: the task sets no config.slurm.time, so Slurm applies none: the partition has "
                  "no DefaultTime and its MaxTime is UNLIMITED.\n") != std::string::npos);
}

TEST_CASE("sbatch_options become #SBATCH lines, bare flags without a value") {
    auto plan = minimal_plan();
    plan.extra_options = {{"exclusive", ""}, {"mail-type", "END,FAIL"}};
    auto r = render_sbatch_script(spec_with("", "x"), plan);
    REQUIRE(r);
    CHECK(r->find("#SBATCH --exclusive\n") != std::string::npos);
    CHECK(r->find("#SBATCH --mail-type=END,FAIL\n") != std::string::npos);
    plan.extra_options = {{"comment2", "a\nb"}};
    CHECK_FALSE(render_sbatch_script(spec_with("", "x"), plan));
}

TEST_CASE("other refusals: NUL bytes, bad names, oversized scripts") {
    auto zero = minimal_plan();
    zero.time_limit_minutes = 0;
    CHECK_FALSE(render_sbatch_script(spec_with("", "x"), zero));

    auto bad_name = minimal_plan();
    bad_name.environment = {{"A;B", "x"}};
    CHECK_FALSE(render_sbatch_script(spec_with("", "x"), bad_name));

    auto nul_value = minimal_plan();
    nul_value.environment = {{"A", std::string("a\0b", 3)}};
    CHECK_FALSE(render_sbatch_script(spec_with("", "x"), nul_value));

    CHECK_FALSE(render_sbatch_script(spec_with(std::string("a\0b", 3), "x"), minimal_plan()));
    auto big = render_sbatch_script(spec_with("", std::string(k_max_script_bytes + 1, 'x')), minimal_plan());
    REQUIRE_FALSE(big);
    CHECK(big.error().message.find("128 KiB") != std::string::npos);
    CHECK(render_sbatch_script(spec_with("", std::string(k_max_script_bytes, 'x')), minimal_plan()));
}

TEST_CASE("secrets never appear in the script, other variables are exported once") {
    auto plan = full_plan();
    plan.environment.emplace_back("TANDEM_JOB_ID", "42"); // the script sets this itself
    const auto script = render(spec_with("echo setup", "echo run"), plan);
    CHECK(script.find("s3cr3t") == std::string::npos);
    CHECK(script.find("HF_TOKEN") == std::string::npos);
    CHECK(script.find("export GREETING='hi'\n") != std::string::npos);
    CHECK(script.find("TANDEM_JOB_ID='42'") != std::string::npos);
    CHECK(script.find("TANDEM_JOB_ID=") == script.rfind("TANDEM_JOB_ID="));
}

TEST_CASE("no CR byte ever reaches the script (sbatch refuses CR LF)") {
    auto plan = full_plan();
    plan.environment = {{"DOS", "a\r\nb\r\n"}};
    const auto script = render(spec_with("echo a\r\necho b\r\n", "x=1\r\n"), plan);
    CHECK(script.find('\r') == std::string::npos);
}

TEST_CASE("time limits are D-HH:MM:SS") {
    CHECK(format_time_limit(1) == "0-00:01:00");
    CHECK(format_time_limit(60) == "0-01:00:00");
    CHECK(format_time_limit(24 * 60) == "1-00:00:00");
    CHECK(format_time_limit(3 * 24 * 60 + 23 * 60 + 59) == "3-23:59:00");
    CHECK(format_time_limit(365 * 24 * 60) == "365-00:00:00");
}

TEST_CASE("srun asks for one task per node, and repeats --cpus-per-task (22.05 does not inherit it)") {
    const auto with_cpus = render(spec_with("", "x"), full_plan());
    CHECK(
        with_cpus.find("srun --export=ALL --nodes=\"$SLURM_JOB_NUM_NODES\" --ntasks=\"$SLURM_JOB_NUM_NODES\" "
                       "--ntasks-per-node=1 --cpus-per-task=16 --kill-on-bad-exit=0 --label") != std::string::npos);
    const auto without = render(spec_with("", "x"), minimal_plan());
    CHECK(without.find("--cpus-per-task") == std::string::npos);
}

TEST_CASE("a git workdir: every node clones it into its own folder before setup") {
    auto spec = spec_with("pip install -e .", "python train.py");
    spec.git_workdir = GitWorkdir{"https://example.com/org/repo.git", "main"};
    auto plan = minimal_plan();
    plan.submit_token = "tandem-0123456789abcdef";
    plan.environment.emplace_back("TANDEM_GIT_URL", "https://example.com/org/repo.git");
    auto script = render_sbatch_script(spec, plan);
    REQUIRE(script);
    CHECK(script->find("export TANDEM_GIT_DIR=\"$HOME/.tandem/workdirs/\"'tandem-0123456789abcdef'\n") !=
          std::string::npos);
    CHECK(script->find("export TANDEM_GIT_URL='https://example.com/org/repo.git'\n") != std::string::npos);
    // The node program (one quoted word) defines the clone function and calls it before setup.
    const auto node = script->find("tandem_node=");
    REQUIRE(node != std::string::npos);
    const auto function = script->find("tandem_git_checkout() {", node);
    const auto call = script->find("tandem_git_checkout \"$TANDEM_GIT_DIR/rank-$SLURM_NODEID\" || exit $?", node);
    const auto setup = script->find("tandem-setup", node);
    CHECK(function != std::string::npos);
    CHECK(call != std::string::npos);
    CHECK(call < setup);
    auto plain = render_sbatch_script(spec_with("", "x"), minimal_plan());
    REQUIRE(plain);
    CHECK(plain->find("tandem_git_checkout") == std::string::npos);
}
