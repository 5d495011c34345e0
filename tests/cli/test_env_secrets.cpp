// What the job sees: the standard TANDEM_*/SKYPILOT_* variables, envs with hostile values arriving byte for
// byte, --env overrides, secrets that reach the job and nothing else, and workdir.

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

using namespace tandem_test;

namespace {

const std::string k_error = "tandem: error: ";

// A run script that writes each named variable, unaltered, to OUT/NAME.
std::string dump_vars_script(const std::string& out_dir, const std::vector<std::string>& names) {
    std::string list;
    for (const auto& n : names) {
        list += (list.empty() ? "" : " ") + n;
    }
    return "  mkdir -p '" + out_dir + "'\n  for v in " + list +
           "; do\n    if [ -n \"${!v+set}\" ]; then printf '%s' \"${!v}\" > '" + out_dir +
           "'/\"$v\"; fi\n  done\n";
}

} // namespace

TEST_CASE("the job gets the standard variables of every backend", "[env]") {
    TempHome t;
    const std::string expected_for = "TANDEM_NODE_RANK=0\n"
                                     "TANDEM_NUM_NODES=1\n"
                                     "TANDEM_NODE_IPS=127.0.0.1\n"
                                     "TANDEM_NUM_GPUS_PER_NODE=0\n"
                                     "SKYPILOT_NODE_RANK=0\n"
                                     "SKYPILOT_NUM_NODES=1\n"
                                     "SKYPILOT_NODE_IPS=127.0.0.1\n"
                                     "SKYPILOT_NUM_GPUS_PER_NODE=0\n";
    auto r = t.tandem({"launch", fixtures_dir() + "/hello_env.yaml"});
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "TANDEM_JOB_ID=1\n" + expected_for);

    // The caller's own TANDEM_*/SKYPILOT_* values (say, tandem run from inside a job) do not leak in.
    RunOptions nested;
    nested.env = {{"TANDEM_NODE_RANK", "7"}, {"SKYPILOT_NUM_NODES", "9"}, {"TANDEM_NODE_IPS", "10.0.0.1"}};
    auto second = t.tandem({"launch", fixtures_dir() + "/hello_env.yaml"}, nested);
    INFO(second);
    CHECK(second.exit_code == 0);
    CHECK(second.out == "TANDEM_JOB_ID=2\n" + expected_for);
}

TEST_CASE("envs with hostile values arrive intact", "[env]") {
    TempHome t;
    const std::string out_dir = t.path("vars");
    const std::string pwned = t.path("pwned");
    const std::vector<std::string> names{"QUOTES",     "DOLLAR_HOME", "CMD_SUBST", "BACKTICKS", "SPACES",
                                         "MULTILINE",  "UNICODE",     "SEMICOLON", "BACKSLASH", "EMPTY",
                                         "OVERRIDDEN", "FROM_CALLER", "EQUALS"};
    const auto task =
        t.write("envs.yaml", "name: envs\n"
                             "envs:\n"
                             "  QUOTES: 'he said \"hi\" and it''s fine'\n"
                             "  DOLLAR_HOME: '$HOME'\n"
                             "  CMD_SUBST: '$(touch " +
                                 pwned +
                                 ")'\n"
                                 "  BACKTICKS: '`touch " +
                                 pwned +
                                 "`'\n"
                                 "  SPACES: '  two  spaces  around  '\n"
                                 "  MULTILINE: |\n"
                                 "    line one\n"
                                 "    line two\n"
                                 "  UNICODE: \"h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \U0001F680\"\n"
                                 "  SEMICOLON: 'a; touch " +
                                 pwned +
                                 "; b'\n"
                                 "  BACKSLASH: 'back\\slash\\n'\n"
                                 "  EMPTY: ''\n"
                                 "  OVERRIDDEN: from-file\n"
                                 "  EQUALS: a=b=c\n"
                                 "run: |\n" +
                                 dump_vars_script(out_dir, names));
    RunOptions caller;
    caller.env = {{"FROM_CALLER", "caller value \u2713 $HOME"}};
    auto r = t.tandem(
        {"launch", "--wait", "--env", "OVERRIDDEN=from flag \"q\" $(x)", "--env", "FROM_CALLER", task},
        caller);
    INFO(r);
    REQUIRE(r.exit_code == 0);

    auto var = [&](const std::string& name) { return read_file(out_dir + "/" + name); };
    CHECK(var("QUOTES") == std::optional<std::string>("he said \"hi\" and it's fine"));
    CHECK(var("DOLLAR_HOME") == std::optional<std::string>("$HOME"));
    CHECK(var("CMD_SUBST") == std::optional<std::string>("$(touch " + pwned + ")"));
    CHECK(var("BACKTICKS") == std::optional<std::string>("`touch " + pwned + "`"));
    CHECK(var("SPACES") == std::optional<std::string>("  two  spaces  around  "));
    CHECK(var("MULTILINE") == std::optional<std::string>("line one\nline two\n"));
    CHECK(var("UNICODE") ==
          std::optional<std::string>("h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \U0001F680"));
    CHECK(var("SEMICOLON") == std::optional<std::string>("a; touch " + pwned + "; b"));
    CHECK(var("BACKSLASH") == std::optional<std::string>("back\\slash\\n"));
    CHECK(var("EMPTY") == std::optional<std::string>(""));
    CHECK(var("EQUALS") == std::optional<std::string>("a=b=c"));
    CHECK(var("OVERRIDDEN") == std::optional<std::string>("from flag \"q\" $(x)"));
    CHECK(var("FROM_CALLER") == std::optional<std::string>("caller value \u2713 $HOME"));
    CHECK_FALSE(file_exists(pwned));
}

TEST_CASE("an env without a value needs --env", "[env]") {
    TempHome t;
    const auto task = t.write("token.yaml", "name: token\nenvs:\n  TOKEN:\nrun: printf '%s' \"$TOKEN\"\n");
    auto r = t.tandem({"launch", task});
    INFO(r);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    auto errors = r.err_lines_starting(k_error);
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "envs.TOKEN"));
    CHECK(contains(errors[0], "--env"));
    // Line 3 is `  TOKEN:`.
    CHECK(errors[0].rfind(k_error + task + ":3:3: envs.TOKEN: ", 0) == 0);
    CHECK(t.jobs_json().empty());

    auto given = t.tandem({"launch", "--env", "TOKEN=tok en", task});
    INFO(given);
    CHECK(given.exit_code == 0);
    CHECK(given.out == "tok en");

    SECTION("--env K for a variable the caller does not have") {
        auto missing = t.tandem({"launch", "--env", "NOT_SET_ANYWHERE_XYZ", task},
                                with_env({{"NOT_SET_ANYWHERE_XYZ", std::nullopt}}));
        INFO(missing);
        CHECK(missing.exit_code == 2);
        CHECK(contains(missing.err, "NOT_SET_ANYWHERE_XYZ"));
    }
    SECTION("--env with an invalid name") {
        auto bad = t.tandem({"launch", "--env", "1BAD=x", task});
        INFO(bad);
        CHECK(bad.exit_code == 2);
        CHECK(contains(bad.err, "1BAD"));
    }
}

namespace {

// Everything a secret must never show up in, after job 1 ran.
void check_secret_absent(const TempHome& t, const std::string& secret, const std::vector<RunResult>& runs) {
    for (const auto& r : runs) {
        INFO(r);
        CHECK_FALSE(contains(r.out, secret));
        CHECK_FALSE(contains(r.err, secret));
    }
    for (const std::vector<std::string>& args : {std::vector<std::string>{"status", "--all", "--json"},
                                                 {"status", "--all"},
                                                 {"status", "1", "--json"},
                                                 {"logs", "1"},
                                                 {"infra", "--json"}}) {
        auto r = t.tandem(args);
        INFO(args[0] << "\n" << r);
        CHECK(r.exit_code == 0);
        CHECK_FALSE(contains(r.out, secret));
        CHECK_FALSE(contains(r.err, secret));
    }
    const auto files = list_files(t.tandem_home());
    CHECK(std::find(files.begin(), files.end(), t.state_dir() + "/jobs.db") != files.end());
    CHECK(std::find(files.begin(), files.end(), t.job_dir(1) + "/run.sh") != files.end());
    for (const auto& f : files) {
        // Every file under TANDEM_HOME: jobs.db, jobs.db-wal, jobs.db-shm and the job folders.
        INFO(f);
        auto bytes = read_file(f);
        REQUIRE(bytes);
        CHECK_FALSE(contains(*bytes, secret));
    }
}

} // namespace

TEST_CASE("a secret from the file reaches the job and nothing else", "[secrets]") {
    TempHome t;
    const std::string secret = "s3cr3t-value";
    const std::string got = t.path("got-secret");
    const auto task = t.write("secret.yaml", "name: secretive\n"
                                             "secrets:\n"
                                             "  API_KEY: " +
                                                 secret +
                                                 "\n"
                                                 "run: |\n"
                                                 "  printf '%s' \"$API_KEY\" > '" +
                                                 got +
                                                 "'\n"
                                                 "  echo job ran\n");
    std::vector<RunResult> runs;
    runs.push_back(t.tandem({"plan", task}));
    runs.push_back(t.tandem({"plan", "--json", task}));
    CHECK(runs.back().exit_code == 0);
    CHECK(contains(runs.front().out, "API_KEY"));
    runs.push_back(t.tandem({"launch", task}));
    INFO(runs.back());
    REQUIRE(runs.back().exit_code == 0);
    CHECK(runs.back().out == "job ran\n");
    CHECK(read_file(got) == std::optional<std::string>(secret));
    check_secret_absent(t, secret, runs);
}

TEST_CASE("a secret from --secret reaches the job and nothing else", "[secrets]") {
    TempHome t;
    const std::string got = t.path("got-secret");
    const auto task = t.write("secret.yaml", "name: secretive\n"
                                             "secrets:\n"
                                             "  API_KEY:\n"
                                             "run: |\n"
                                             "  printf '%s' \"$API_KEY\" > '" +
                                                 got +
                                                 "'\n"
                                                 "  echo job ran\n");
    SECTION("--secret K=V") {
        const std::string secret = "fl4g-9f8e7d-secret";
        std::vector<RunResult> runs;
        runs.push_back(t.tandem({"plan", "--secret", "API_KEY=" + secret, task}));
        runs.push_back(t.tandem({"plan", "--json", "--secret", "API_KEY=" + secret, task}));
        runs.push_back(t.tandem({"launch", "-d", "--json", "--secret", "API_KEY=" + secret, task}));
        INFO(runs.back());
        REQUIRE(runs.back().exit_code == 0);
        auto job = t.wait_for_terminal(1);
        CHECK(job["state"] == "SUCCEEDED");
        CHECK(read_file(got) == std::optional<std::string>(secret));
        check_secret_absent(t, secret, runs);
    }
    SECTION("--secret K from the caller's environment") {
        const std::string secret = "c4ller-pr0vided-secret";
        RunOptions caller;
        caller.env = {{"API_KEY", secret}};
        std::vector<RunResult> runs;
        runs.push_back(t.tandem({"launch", "--secret", "API_KEY", task}, caller));
        INFO(runs.back());
        REQUIRE(runs.back().exit_code == 0);
        CHECK(read_file(got) == std::optional<std::string>(secret));
        check_secret_absent(t, secret, runs);
    }
    SECTION("without a value it is an error naming secrets.API_KEY and --secret") {
        auto r = t.tandem({"launch", task});
        INFO(r);
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "secrets.API_KEY"));
        CHECK(contains(r.err, "--secret"));
        CHECK(t.jobs_json().empty());
    }
}

TEST_CASE("workdir is the job's current directory", "[workdir]") {
    TempHome t;
    const std::string wd = t.path("work dir");
    std::filesystem::create_directories(wd);
    const auto task = t.write("wd.yaml", "name: wd\nworkdir: " + wd + "\nrun: pwd -P\n");
    // Launch from somewhere else, so the default (the caller's folder) cannot pass for the workdir.
    RunOptions elsewhere;
    elsewhere.cwd = t.home();
    auto r = t.tandem({"launch", task}, elsewhere);
    INFO(r);
    CHECK(r.exit_code == 0);
    CHECK(r.out == real_path(wd) + "\n");

    SECTION("without workdir the job runs where tandem was called") {
        const auto plain = t.write("plain.yaml", "name: plain\nrun: pwd -P\n");
        auto p = t.tandem({"launch", plain}, elsewhere);
        INFO(p);
        CHECK(p.exit_code == 0);
        CHECK(p.out == real_path(t.home()) + "\n");
    }
    SECTION("a workdir that does not exist is refused") {
        const auto missing =
            t.write("missing.yaml", "name: wd\nworkdir: " + t.path("no-such-dir") + "\nrun: pwd\n");
        auto m = t.tandem({"launch", missing});
        INFO(m);
        CHECK(m.exit_code == 2);
        auto errors = m.err_lines_starting(k_error);
        REQUIRE(errors.size() == 1);
        CHECK(errors[0].rfind(k_error + missing + ":2:", 0) == 0);
        CHECK(contains(errors[0], "workdir"));
        CHECK(contains(errors[0], "no-such-dir"));
        CHECK(t.jobs_json().size() == 1); // only the first launch
    }
    SECTION("a workdir that is a file is refused") {
        const auto file = t.write("a-file", "x");
        const auto bad = t.write("file.yaml", "name: wd\nworkdir: " + file + "\nrun: pwd\n");
        auto m = t.tandem({"launch", bad});
        INFO(m);
        CHECK(m.exit_code == 2);
        CHECK(contains(m.err, "workdir"));
    }
}

namespace {

// A git repository in `dir`: tag v1 (version.txt "v1"), then main ("main").
void make_repo(const std::string& dir) {
    std::filesystem::create_directories(dir);
    auto git = [&](std::vector<std::string> args) {
        std::vector<std::string> argv{"/usr/bin/git", "-C", dir, "-c", "user.email=t@example.com", "-c",
                                      "user.name=t"};
        argv.insert(argv.end(), args.begin(), args.end());
        auto r = run(argv);
        INFO(r);
        REQUIRE(r.exit_code == 0);
    };
    git({"init", "-q", "-b", "main"});
    for (const char* version : {"v1", "main"}) {
        std::ofstream(dir + "/version.txt") << version << "\n";
        git({"add", "version.txt"});
        git({"commit", "-q", "-m", version});
        if (std::string(version) == "v1") {
            git({"tag", "v1"});
        }
    }
}

} // namespace

TEST_CASE("a git workdir is cloned into the job's folder, and GIT_TOKEN reaches the job as a secret only",
          "[workdir]") {
    TempHome t;
    make_repo(t.path("repo"));
    const std::string token = "ghp_not-a-real-token-123";
    const auto task = t.write("git.yaml", "name: git\nworkdir:\n  url: file://" + t.path("repo") +
                                              "\n  ref: v1\n"
                                              "run: |\n  echo \"version=$(cat version.txt) in=$(basename "
                                              "$(dirname $PWD))/$(basename $PWD)\"\n"
                                              // the token in two halves: the task's own text (which
                                              // plan prints) must not hold the secret whole
                                              "  test \"${GIT_TOKEN%-token-123}\" = 'ghp_not-a-real' && "
                                              "test \"${GIT_TOKEN#ghp_not-a-real}\" = '-token-123' && "
                                              "echo token-arrived\n");
    RunOptions options;
    options.env = {{"GIT_TOKEN", token}};
    std::vector<RunResult> runs;
    runs.push_back(t.tandem({"plan", task}, options));
    CHECK(contains(runs.back().out, "a clone of file://"));
    runs.push_back(t.tandem({"launch", task}, options));
    INFO(runs.back());
    REQUIRE(runs.back().exit_code == 0);
    CHECK(contains(runs.back().out, "version=v1 in=1/workdir"));
    CHECK(contains(runs.back().out, "token-arrived"));
    CHECK(file_exists(t.job_dir(1) + "/workdir/version.txt"));
    runs.push_back(t.tandem({"status", "1", "--json"}));
    runs.push_back(t.tandem({"logs", "1"}));
    check_secret_absent(t, token, runs);
}

TEST_CASE("a git workdir that cannot be cloned fails before setup with git's message", "[workdir]") {
    TempHome t;
    make_repo(t.path("repo"));
    const auto task = t.write("git.yaml", "name: git\nworkdir:\n  url: file://" + t.path("repo") +
                                              "\n  ref: no-such-ref\nsetup: echo setup-ran\nrun: echo run-ran\n");
    auto r = t.tandem({"launch", task});
    INFO(r);
    CHECK(r.exit_code == 128);
    CHECK(contains(r.out, "Remote branch no-such-ref not found"));
    CHECK(contains(r.out, "could not be cloned (git exit 128); setup and run did not start"));
    CHECK_FALSE(contains(r.out, "setup-ran"));
    CHECK(t.job_json(1)["state"] == "FAILED");
}

TEST_CASE("GIT_SSH_KEY_PATH that is not a private key is bad input: exit 2, nothing recorded", "[workdir]") {
    TempHome t;
    const auto task = t.write("git.yaml", "workdir: {url: 'git@example.com:org/repo.git'}\nrun: ls\n");
    const auto not_key = t.write("not-a-key", "hello\n");
    RunOptions options;
    options.env = {{"GIT_SSH_KEY_PATH", not_key}};
    auto r = t.tandem({"launch", task}, options);
    INFO(r);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "tandem: error: GIT_SSH_KEY_PATH=" + not_key + ": not a readable private key file"));
    CHECK(t.jobs_json().empty()); // nothing recorded
}
