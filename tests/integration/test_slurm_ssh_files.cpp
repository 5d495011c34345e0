// Slurm over SSH: workdir upload (.git and .gitignore'd paths left out, a size limit) and the injection
// corpus: hostile names, values and paths reach the job literally and nothing in them ever runs.

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_slurm_ssh_support.hpp"

using namespace tandem_test;
namespace fs = std::filesystem;

TEST_CASE("ssh: the workdir is uploaded without .git and .gitignore'd paths, and the job runs there") {
    SshLab lab;
    const std::string wd = lab.home.root() + "/project";
    lab.home.write("project/train.sh", "#!/bin/bash\necho trained-$1\n");
    fs::permissions(wd + "/train.sh", fs::perms::owner_all);
    lab.home.write("project/.gitignore", "*.ckpt\n/data/\n!keep.ckpt\nlogs/\n");
    lab.home.write("project/model.ckpt", "big");
    lab.home.write("project/keep.ckpt", "kept");
    lab.home.write("project/data/raw.bin", "raw");
    lab.home.write("project/src/data/inner.txt", "inner"); // /data/ is anchored: this one stays
    lab.home.write("project/src/logs/x.log", "log");
    lab.home.write("project/.git/HEAD", "ref: refs/heads/main\n");
    lab.home.write("project/sub/.gitignore", "secret.txt\n");
    lab.home.write("project/sub/secret.txt", "no");
    lab.home.write("project/sub/ok.txt", "yes");
    auto file = lab.task("wd", "name: ssh-workdir\nworkdir: project\n"
                               "run: |\n  pwd\n  ./train.sh now\n  find . -type f | sort\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, slurm_env().at("SLURM_USER_HOME") + "/.tandem/workdirs/tandem-"));
    CHECK(contains(r.out, "trained-now"));
    std::vector<std::string> files;
    for (const auto& l : split_lines(r.out)) {
        if (l.rfind("./", 0) == 0) {
            files.push_back(l);
        }
    }
    CHECK(files == std::vector<std::string>{"./.gitignore", "./keep.ckpt", "./src/data/inner.txt",
                                            "./sub/.gitignore", "./sub/ok.txt", "./train.sh"});
}

TEST_CASE("ssh: a workdir over the size limit is refused before anything is sent") {
    SshLab lab(SshTargetOverrides{"", "", "", "    workdir_limit_mb: \"1\"\n"});
    lab.home.write("big/blob.bin", std::string(1536 * 1024, 'x'));
    lab.home.write("big/ignored.bin", std::string(4 * 1024 * 1024, 'y'));
    lab.home.write("big/.gitignore", "ignored.bin\n");
    auto file = lab.task("big", "name: ssh-big\nworkdir: big\nrun: ls\n");
    auto r = lab.tandem({"launch", "-d", file, "--infra", "slurm"});
    INFO(r);
    CHECK(r.exit_code == 2);
    auto errors = r.err_lines_starting("tandem: error: ");
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "1.5 MiB"));
    CHECK(contains(errors[0], "limit is 1.0 MiB"));
    CHECK(contains(r.err, "workdir_limit_mb"));
}

TEST_CASE("ssh: hostile names, values, secrets and paths are passed literally and nothing executes") {
    SshLab lab;
    const std::string marker = "/tmp/tandem-pwned-" + std::to_string(::getpid());
    ::unlink(marker.c_str());
    const std::string t = "touch " + marker;
    const std::string nasty = "a b 'q' \"dq\" $(" + t + ") `" + t + "` ; " + t + " | " + t + " & ${HOME} \\";
    // A workdir whose local path and file names carry the corpus too (SFTP paths, never a shell). Path
    // components cannot hold '/', so these would create a relative file: it must appear nowhere.
    const std::string rel_marker = "tandem-pwned-" + std::to_string(::getpid());
    const std::string rt = "touch " + rel_marker;
    const std::string dir_name = "w d 'q' $(" + rt + ") `" + rt + "` ; " + rt + "\nnext";
    const std::string file_name = "f $(" + rt + ") ;'\".txt";
    const fs::path wd = fs::path(lab.home.root()) / dir_name;
    fs::create_directories(wd);
    std::ofstream(wd / file_name) << "content\n";
    nlohmann::json env = {{"NASTY", nasty}, {"MULTI", "line one\nline two; " + t}};
    const std::string yaml =
        "name: " + nlohmann::json(nasty.substr(0, 60)).dump() + "\n" +
        "workdir: " + nlohmann::json(dir_name).dump() + "\n" + "envs: " + env.dump() + "\n" +
        "secrets: {SECRET: " + nlohmann::json("s3cr3t " + nasty + "\n2nd").dump() + "}\n" +
        "run: |\n"
        "  printf 'NASTY=[%s]\\n' \"$NASTY\"\n"
        "  printf 'MULTI=[%s]\\n' \"$MULTI\"\n"
        "  printf 'NAME=[%s]\\n' \"$TANDEM_JOB_NAME\"\n"
        "  printf '%s' \"$SECRET\" | sha256sum | cut -c1-16\n"
        "  ls\n";
    auto file = lab.task("nasty", yaml);
    auto r = lab.tandem({"launch", file, "--infra", "slurm"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "NASTY=[" + nasty + "]"));
    CHECK(contains(r.out, "MULTI=[line one\nline two; " + t + "]"));
    CHECK(contains(r.out, "NAME=[" + nasty.substr(0, 60) + "]"));
    CHECK(contains(r.out, file_name + "\n"));
    CHECK_FALSE(contains(r.out, "\n" + rel_marker + "\n"));
    CHECK_FALSE(fs::exists(slurm_env().at("SLURM_USER_HOME") + "/" + rel_marker));
    // The secret arrived whole (its hash), and its value is nowhere in tandem's output or state.
    auto hash =
        run({"/bin/bash", "-c", "printf '%s' \"$0\" | sha256sum | cut -c1-16", "s3cr3t " + nasty + "\n2nd"});
    CHECK(contains(r.out, split_lines(hash.out).at(0)));
    CHECK_FALSE(contains(r.out + r.err, "s3cr3t"));
    for (const auto& f : list_files(lab.home.tandem_home())) {
        auto text = read_file(f);
        CHECK_FALSE((text && contains(*text, "s3cr3t")));
    }
    auto plan = lab.tandem({"plan", file});
    CHECK_FALSE(contains(plan.out + plan.err, "s3cr3t"));
    CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("rest and ssh together: control over slurmrestd, workdir and logs over SSH") {
    const auto& env = slurm_env();
    SshLab lab(SshTargetOverrides{"", "", "",
                                  "    rest:\n      url: " + env.at("SLURM_REST_URL") + "\n      user: " +
                                      env.at("SLURM_JWT_USER") + "\n      token_env: SLURM_JWT\n"});
    lab.options.env["SLURM_JWT"] = env.at("SLURM_JWT");
    lab.home.write("both/input.txt", "from-the-workdir\n");
    auto file = lab.task("both", "name: rest-and-ssh\nnum_nodes: 2\nworkdir: both\nconfig:\n  slurm:\n"
                                 "    partition: cpu\nrun: echo \"$(cat input.txt) on $SLURMD_NODENAME\"\n");
    auto r = lab.tandem({"launch", file});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "[rank 0] from-the-workdir on cpu1"));
    CHECK(contains(r.out, "[rank 1] from-the-workdir on cpu2"));
    auto plan = lab.tandem({"plan", file});
    CHECK(contains(plan.out, "POST " + env.at("SLURM_REST_URL"))); // control went to slurmrestd
    auto one = lab.tandem({"logs", "1", "--node", "0"});
    CHECK(split_lines(one.out) == std::vector<std::string>{"from-the-workdir on cpu1"});
}
