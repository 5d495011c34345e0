// SlurmSshBackend's logic against a scripted RemoteHost (what the real login node answered, from the
// fixtures): the idempotent submit after a lost answer, squeue -> sacct fallback, refusals quoted.
// The real transport and Slurm are exercised by tests/integration/test_slurm_ssh*.cpp.

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "backends/slurm/slurm_ssh_backend.hpp"

using namespace tandem;
using namespace tandem::slurm;

namespace {
JobIdentity token_identity(const std::string& token) {
    JobIdentity id;
    id.token = token;
    return id;
}
} // namespace
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(TANDEM_FIXTURES) + "/slurm-cli/" + name);
    REQUIRE(in.good());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Call {
    std::string command;
    std::string input;
};

// Answers exec() with `respond`; records every call. SFTP is not used by these tests.
class ScriptedHost final : public net::RemoteHost {
public:
    std::function<Result<net::ExecResult>(const Call&)> respond;
    std::vector<Call> calls;
    int reconnects = 0;

    std::string describe() const override { return "u@login:22"; }
    Result<net::ExecResult> exec(const std::string& command, std::string_view input) override {
        calls.push_back(Call{command, std::string(input)});
        return respond(calls.back());
    }
    Result<std::optional<net::RemoteFileInfo>> stat(const std::string&) override {
        return std::optional<net::RemoteFileInfo>{};
    }
    Result<std::optional<std::string>> read(const std::string&, std::uint64_t, std::uint64_t) override {
        return std::optional<std::string>{};
    }
    Status write(const std::string&, std::string_view, int) override { return {}; }
    Status make_dirs(const std::string&) override { return {}; }
    Status reconnect() override {
        ++reconnects;
        return {};
    }
    int count(const std::string& needle) const {
        int n = 0;
        for (const auto& c : calls) {
            n += c.command.find(needle) != std::string::npos ? 1 : 0;
        }
        return n;
    }
};

net::ExecResult ok(std::string out) {
    return net::ExecResult{0, std::move(out), ""};
}

struct Fixture {
    std::string state =
        (fs::temp_directory_path() / ("tandem-ssh-unit-" + std::to_string(::getpid()))).string();
    ScriptedHost* host = nullptr;
    std::unique_ptr<SlurmSshBackend> backend;

    Fixture() {
        fs::remove_all(state);
        auto h = std::make_unique<ScriptedHost>();
        host = h.get();
        slurm::SlurmSettings settings;
        settings.ssh = SshSettings{"login", 22, "u", "", "", ""};
        settings.home = "/home/u";
        backend = std::make_unique<SlurmSshBackend>("lab", settings, state, std::move(h));
    }
    ~Fixture() { fs::remove_all(state); }
};

TaskSpec task() {
    TaskSpec spec;
    spec.name = "t";
    spec.run = "echo hi";
    spec.secrets = {{"TOKEN", "s3cr3t"}};
    return spec;
}

Placement cpu() {
    Placement p;
    p.cluster = "lab";
    p.kind = BackendKind::slurm;
    p.pool = "cpu";
    return p;
}

// The job's comment as the #SBATCH line gives it (quoted: it holds a blank).
std::string comment_in(const std::string& script) {
    const auto at = script.find("--comment=");
    REQUIRE(at != std::string::npos);
    std::string value = script.substr(at + 10, script.find('\n', at) - at - 10);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
        value = value.substr(1, value.size() - 2);
    }
    return value;
}

JobRecord record(std::int64_t id, std::string remote) {
    JobRecord j;
    j.id = id;
    j.remote_id = std::move(remote);
    j.cluster = "lab";
    return j;
}

} // namespace

TEST_CASE("a submit whose answer was lost is found by its token, not sent twice") {
    Fixture f;
    std::string comment;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        if (c.command.find("'sinfo'") == 0) {
            return ok(fixture("sinfo-22.05.txt"));
        }
        if (c.command.find("sbatch --parsable") != std::string::npos) {
            comment = comment_in(c.input);
            return fail(ErrorKind::unavailable, "ssh to u@login:22: the connection was lost");
        }
        if (c.command.find("--me") != std::string::npos) {
            return ok("5\x1f(null)\n77\x1f" + comment + "\n");
        }
        return fail(ErrorKind::internal, "unexpected command " + c.command);
    };
    auto id = f.backend->submit(task(), cpu(), 1, token_identity("abcde12345"));
    INFO((id ? "" : id.error().message));
    REQUIRE(id);
    CHECK(*id == "77");
    CHECK(f.host->count("sbatch --parsable") == 1);
    CHECK(f.host->reconnects == 1);
    // The secret went on stdin, NUL-terminated, ahead of the script; never on the command line.
    const auto& sbatch = f.host->calls[1];
    CHECK(sbatch.input.rfind(std::string("s3cr3t\0#!/bin/bash\n", 19), 0) == 0);
    CHECK(sbatch.command.find("s3cr3t") == std::string::npos);
    CHECK(sbatch.command.find("'TOKEN'") != std::string::npos);
    std::ifstream out(f.state + "/jobs/1/slurm-output");
    std::string path;
    std::getline(out, path);
    // The comment: the launch's token, then the job's identity with the Slurm user.
    const std::string token = comment.substr(0, comment.find(' '));
    CHECK(token == "tandem-abcde12345");
    auto identity = decode_identity(comment);
    REQUIRE(identity);
    REQUIRE(*identity);
    CHECK((*identity)->token == "abcde12345");
    CHECK((*identity)->user == "u");
    CHECK(path == "/home/u/" + token + "-77.out");
}

TEST_CASE("sbatch refusing the job is one line with sbatch's own words") {
    Fixture f;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        if (c.command.find("'sinfo'") == 0) {
            return ok(fixture("sinfo-22.05.txt"));
        }
        return net::ExecResult{1, "", "sbatch: error: Batch job submission failed: Invalid account\nmore\n"};
    };
    auto id = f.backend->submit(task(), cpu(), 1, token_identity("abcde12345"));
    REQUIRE_FALSE(id);
    CHECK(id.error().message ==
          "cluster lab: sbatch refused the job: sbatch: error: Batch job submission failed: Invalid account");
}

TEST_CASE("refresh: one squeue for all, one sacct for the jobs slurmctld forgot") {
    Fixture f;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        if (c.command.find("'squeue'") != std::string::npos) {
            CHECK(c.command.find("'--jobs=9,10,12'") != std::string::npos);
            auto lines = fixture("squeue-22.05.txt");
            // Only job 12 is still held by slurmctld.
            const auto at = lines.find("12\x1f");
            return ok(lines.substr(at, lines.find('\n', at) - at + 1));
        }
        if (c.command.find("'sacct'") != std::string::npos) {
            CHECK(c.command.find("'--jobs=9,10'") != std::string::npos);
            return ok(fixture("sacct-22.05.txt"));
        }
        return fail(ErrorKind::internal, "unexpected " + c.command);
    };
    auto updates = f.backend->refresh({record(1, "9"), record(2, "10"), record(3, "12"), record(4, "")});
    REQUIRE(updates);
    REQUIRE(updates->size() == 4);
    CHECK((*updates)[0].state == JobState::succeeded);
    CHECK((*updates)[1].state == JobState::failed);
    CHECK((*updates)[1].exit_code == 3);
    CHECK((*updates)[2].state == JobState::running);
    CHECK((*updates)[3].state == JobState::unknown);
    CHECK(f.host->calls.size() == 2);
}

TEST_CASE("refresh on 24.11 (recorded): squeue's EXIT:SIGNAL, and sacct without accounting") {
    Fixture f;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        if (c.command.find("'squeue'") != std::string::npos) {
            CHECK(c.command.find("'--jobs=71,64,65,60'") != std::string::npos);
            return ok(fixture("squeue-24.11.txt")); // 60 is not among them: it has left slurmctld
        }
        if (c.command.find("'sacct'") != std::string::npos) {
            CHECK(c.command.find("'--jobs=60'") != std::string::npos);
            // What 24.11's sacct says, with exit status 1, on a cluster without slurmdbd.
            return net::ExecResult{1, "", fixture("sacct-24.11-disabled.txt")};
        }
        return fail(ErrorKind::internal, "unexpected " + c.command);
    };
    auto updates = f.backend->refresh({record(1, "71"), record(2, "64"), record(3, "65"), record(4, "60")});
    INFO((updates ? "" : updates.error().message));
    REQUIRE(updates);
    REQUIRE(updates->size() == 4);
    CHECK((*updates)[0].state == JobState::failed);
    CHECK((*updates)[0].exit_code == 3);
    CHECK((*updates)[1].state == JobState::failed);
    CHECK((*updates)[1].reason == "timeout");
    CHECK_FALSE((*updates)[1].exit_code);
    CHECK((*updates)[2].state == JobState::running);
    CHECK((*updates)[3].state == JobState::unknown);
    CHECK((*updates)[3].reason.find("keeps no accounting") != std::string::npos);
    CHECK(f.host->calls.size() == 2);
}

TEST_CASE("check on 24.11 (recorded): the version from sinfo --version") {
    Fixture f;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        CHECK(c.command == "'sinfo' '--version' && 'sbatch' '--version'");
        return ok(fixture("version-24.11.txt"));
    };
    auto said = f.backend->check();
    REQUIRE(said);
    CHECK(*said == "Slurm 24.11.5 over SSH (u@login:22)");
}

TEST_CASE("refresh: squeue's 'Invalid job id' means none is held, and bad output is quoted") {
    Fixture f;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        if (c.command.find("'squeue'") != std::string::npos) {
            return net::ExecResult{1, "", "slurm_load_jobs error: Invalid job id specified\n"};
        }
        return ok("");
    };
    auto gone = f.backend->refresh({record(1, "9")});
    REQUIRE(gone);
    CHECK((*gone)[0].state == JobState::unknown);
    CHECK((*gone)[0].reason.find("left slurmctld") != std::string::npos);

    f.host->respond = [&](const Call&) -> Result<net::ExecResult> { return ok("garbage line\n"); };
    auto bad = f.backend->refresh({record(1, "9")});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message ==
          "cluster lab: squeue printed an unexpected line (expected 9 fields): 'garbage line'");

    f.host->respond = [&](const Call&) -> Result<net::ExecResult> {
        return fail(ErrorKind::unavailable, "ssh to u@login:22: connection refused");
    };
    auto down = f.backend->refresh({record(1, "9")});
    REQUIRE_FALSE(down);
    CHECK(down.error().kind == ErrorKind::unavailable);
    CHECK(down.error().message == "cluster lab: ssh to u@login:22: connection refused");
}

TEST_CASE("cancel: a job Slurm no longer knows is not an error, other refusals are") {
    Fixture f;
    f.host->respond = [&](const Call& c) -> Result<net::ExecResult> {
        CHECK(c.command == "'scancel' '9'");
        return net::ExecResult{1, "",
                               "scancel: error: Kill job error on job id 9: Invalid job id specified\n"};
    };
    CHECK(f.backend->cancel(record(1, "9")));
    f.host->respond = [&](const Call&) -> Result<net::ExecResult> {
        return net::ExecResult{1, "",
                               "scancel: error: Kill job error on job id 9: Access/permission denied\n"};
    };
    auto denied = f.backend->cancel(record(1, "9"));
    REQUIRE_FALSE(denied);
    CHECK(denied.error().message ==
          "cluster lab: scancel 9 exited 1: scancel: error: Kill job error on job id 9: "
          "Access/permission denied");
}
