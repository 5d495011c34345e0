// The submit command over SSH, run by bash on this machine with a fake `sbatch` on PATH: secrets arrive in
// sbatch's environment exactly, the script arrives whole on stdin, and nothing in a hostile value runs.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include "backends/slurm/slurm_cli.hpp"

using namespace tandem::slurm;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Runs `command` with bash -c (as sshd runs it with the user's shell), `input` on stdin.
int run_bash(const std::string& command, const std::string& input, const fs::path& bin, const fs::path& out) {
    const fs::path in_file = out / "stdin";
    std::ofstream(in_file, std::ios::binary) << input;
    const pid_t pid = fork();
    if (pid == 0) {
        const std::string path = bin.string() + ":/usr/bin:/bin";
        ::setenv("PATH", path.c_str(), 1);
        ::setenv("OUT", out.c_str(), 1);
        FILE* f = std::freopen(in_file.c_str(), "rb", stdin);
        f = f != nullptr ? std::freopen((out / "stdout").c_str(), "wb", stdout) : f;
        f = f != nullptr ? std::freopen((out / "stderr").c_str(), "wb", stderr) : f;
        if (f == nullptr) {
            _exit(126);
        }
        execl("/bin/bash", "bash", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

TEST_CASE("sbatch over SSH: secrets reach sbatch's environment on stdin, the script follows whole") {
    const fs::path root = fs::temp_directory_path() / ("tandem-submit-" + std::to_string(::getpid()));
    fs::create_directories(root / "bin");
    fs::create_directories(root / "out");
    const fs::path marker = root / "pwned";
    {
        std::ofstream f(root / "bin" / "sbatch");
        f << "#!/bin/bash\nprintf '%s\\n' \"$@\" > \"$OUT/args\"\ncat > \"$OUT/script\"\n"
             "printf '%s' \"$HF_TOKEN\" > \"$OUT/HF_TOKEN\"\nprintf '%s' \"$WEIRD\" > \"$OUT/WEIRD\"\n"
             "echo 4242\n";
    }
    fs::permissions(root / "bin" / "sbatch", fs::perms::owner_all);
    const std::string evil = "a b 'q' \"dq\" $(touch " + marker.string() + ") `touch " + marker.string() +
                             "` ; touch " + marker.string() + "\nsecond line\\n $HOME";
    const std::string script = "#!/bin/bash\n#SBATCH --job-name=x\necho 'body' \"$(date)\"\n";
    const std::string command = cli::sbatch_command({"HF_TOKEN", "WEIRD"});
    const int rc = run_bash(command, cli::sbatch_input({"s3cr3t\nwith newline", evil}, script), root / "bin",
                            root / "out");
    CHECK(rc == 0);
    CHECK(read(root / "out" / "HF_TOKEN") == "s3cr3t\nwith newline");
    CHECK(read(root / "out" / "WEIRD") == evil);
    CHECK(read(root / "out" / "script") == script);
    CHECK(read(root / "out" / "args") == "--parsable\n");
    CHECK_FALSE(fs::exists(marker));
    // The command line names the secrets, never their values.
    CHECK(command.find("s3cr3t") == std::string::npos);
    CHECK(command ==
          "'/bin/bash' '-c' 'for n in \"$@\"; do IFS= read -r -d '\\'''\\'' v || { echo '\\''tandem: "
          "secrets missing on stdin'\\'' >&2; exit 97; }; export \"$n=$v\"; done; unset n v; exec sbatch "
          "--parsable' 'tandem-submit' 'HF_TOKEN' 'WEIRD'");

    // No secrets: the script alone.
    fs::remove(root / "out" / "script");
    CHECK(run_bash(cli::sbatch_command({}), script, root / "bin", root / "out") == 0);
    CHECK(read(root / "out" / "script") == script);
    // A missing secret value is refused before sbatch runs.
    fs::remove(root / "out" / "script");
    CHECK(run_bash(cli::sbatch_command({"A"}), "no-terminator", root / "bin", root / "out") == 97);
    CHECK(read(root / "out" / "stderr") == "tandem: secrets missing on stdin\n");
    CHECK_FALSE(fs::exists(root / "out" / "script"));
    fs::remove_all(root);
}
