// The tar stream and the upload scan. Archives are checked by GNU tar itself (the tool that unpacks them
// on a cluster): listed and extracted, and the files compared byte for byte.

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "backends/upload/tar_stream.hpp"
#include "backends/upload/upload_set.hpp"

using namespace tandem;
using namespace tandem::upload;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        char tmpl[] = "/tmp/tandem-upload-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

void write_file(const fs::path& p, const std::string& text, bool exec = false) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    if (exec) {
        fs::permissions(p, fs::perms::owner_exec, fs::perm_options::add);
    }
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string archive(const Unit& unit, std::size_t piece = 7) {
    TarSource tar(tar_entries(unit));
    std::string out, buf(piece, '\0');
    for (;;) {
        auto n = tar.read(buf.data(), buf.size());
        REQUIRE(n);
        if (*n == 0) {
            break;
        }
        out.append(buf.data(), *n);
    }
    return out;
}

int run(const std::string& command) {
    const int rc = std::system(command.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TaskSpec spec_with_workdir(const fs::path& dir) {
    TaskSpec spec;
    spec.workdir = dir.string();
    return spec;
}

} // namespace

TEST_CASE("tar: pax records count their own length") {
    CHECK(pax_record("path", "a") == "9 path=a\n");
    const std::string long_value(95, 'x'); // "1xx path=...\n": the length crosses 99 -> 100
    const std::string r = pax_record("path", long_value);
    CHECK(r.size() == std::stoul(r.substr(0, r.find(' '))));
}

TEST_CASE("tar: ustar names split at a slash, longer names need pax") {
    CHECK(fits_ustar(std::string(100, 'a')));
    CHECK_FALSE(fits_ustar(std::string(101, 'a')));
    CHECK(fits_ustar(std::string(150, 'a') + "/" + std::string(90, 'b')));
    CHECK_FALSE(fits_ustar(std::string(160, 'a') + "/b"));
    const std::string h = ustar_header("dir/file", '0', 5, 0644, 0);
    CHECK(h.size() == 512);
    CHECK(h.substr(257, 5) == "ustar");
}

TEST_CASE("upload: a workdir skips .git and .gitignored files, and GNU tar unpacks it byte for byte") {
    TempDir tmp;
    const fs::path w = tmp.path / "work";
    write_file(w / "train.py", "print('hi')\n");
    write_file(w / "run.sh", "#!/bin/sh\necho run\n", true);
    write_file(w / ".gitignore", "*.ckpt\nbig/\n");
    write_file(w / "model.ckpt", std::string(1000, 'c'));
    write_file(w / "big" / "data.bin", "x");
    write_file(w / ".git" / "HEAD", "ref: refs/heads/main\n");
    const std::string deep = std::string(120, 'd') + "/" + std::string(120, 'e') + "/" + std::string(30, 'f');
    write_file(w / deep / "leaf.txt", "deep\n");
    std::string binary;
    for (int i = 0; i < 70000; ++i) {
        binary.push_back(static_cast<char>(i * 7919 % 256));
    }
    write_file(w / "sub" / "weights.bin", binary);

    auto set = scan_uploads(spec_with_workdir(w), 10 * 1024 * 1024);
    REQUIRE(set);
    REQUIRE(set->units.size() == 1);
    const Unit& unit = set->units[0];
    std::vector<std::string> names;
    for (const auto& item : unit.items) {
        names.push_back(item.relative);
    }
    CHECK(std::find(names.begin(), names.end(), "model.ckpt") == names.end());
    CHECK(std::find(names.begin(), names.end(), "big") == names.end());
    CHECK(std::find(names.begin(), names.end(), ".git") == names.end());
    CHECK(std::find(names.begin(), names.end(), ".gitignore") != names.end());

    const fs::path tar_file = tmp.path / "w.tar";
    std::ofstream(tar_file, std::ios::binary) << archive(unit);
    const fs::path out = tmp.path / "out";
    fs::create_directories(out);
    REQUIRE(run("tar -x -f " + tar_file.string() + " -C " + out.string()) == 0);
    CHECK(read_file(out / "train.py") == "print('hi')\n");
    CHECK(read_file(out / "sub" / "weights.bin") == binary);
    CHECK(read_file(out / deep / "leaf.txt") == "deep\n");
    CHECK((fs::status(out / "run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
    CHECK((fs::status(out / "train.py").permissions() & fs::perms::owner_exec) == fs::perms::none);
    CHECK_FALSE(fs::exists(out / "model.ckpt"));
    CHECK_FALSE(fs::exists(out / ".git"));
}

TEST_CASE("upload: the hash follows content and modes, not time") {
    TempDir tmp;
    const fs::path w = tmp.path / "work";
    write_file(w / "a.py", "one\n");
    auto first = scan_uploads(spec_with_workdir(w), 1 << 20);
    REQUIRE(first);
    fs::last_write_time(w / "a.py", fs::last_write_time(w / "a.py") - std::chrono::hours(5));
    auto touched = scan_uploads(spec_with_workdir(w), 1 << 20);
    REQUIRE(touched);
    CHECK(first->units[0].hash == touched->units[0].hash);
    CHECK(first->units[0].hash.size() == 32);

    write_file(w / "a.py", "two\n");
    auto edited = scan_uploads(spec_with_workdir(w), 1 << 20);
    REQUIRE(edited);
    CHECK(edited->units[0].hash != first->units[0].hash);

    write_file(w / "a.py", "one\n");
    fs::permissions(w / "a.py", fs::perms::owner_exec, fs::perm_options::add);
    auto exec = scan_uploads(spec_with_workdir(w), 1 << 20);
    REQUIRE(exec);
    CHECK(exec->units[0].hash != first->units[0].hash);
}

TEST_CASE("upload: file_mounts are units of their own, and one content mounted twice is one unit") {
    TempDir tmp;
    write_file(tmp.path / "data" / "x.csv", "1,2\n");
    write_file(tmp.path / "cfg.yaml", "a: 1\n");
    TaskSpec spec;
    spec.file_mounts["/data"] = (tmp.path / "data").string();
    spec.file_mounts["~/data-again"] = (tmp.path / "data").string();
    spec.file_mounts["/etc/app/cfg.yaml"] = (tmp.path / "cfg.yaml").string();
    spec.file_mounts["/bucket"] = "s3://bucket/data"; // refused earlier; never scanned
    auto set = scan_uploads(spec, 1 << 20);
    REQUIRE(set);
    CHECK_FALSE(set->workdir);
    CHECK(set->units.size() == 2);
    REQUIRE(set->mounts.size() == 3);
    for (const auto& m : set->mounts) {
        const Unit& u = set->units[m.unit];
        CHECK(u.single_file == (m.destination == "/etc/app/cfg.yaml"));
    }
    const Unit& file = set->units[set->mounts[1].unit]; // "/data" < "/etc/app/cfg.yaml" < "~/data-again"
    REQUIRE(file.single_file);
    CHECK(file.items.front().relative == "cfg.yaml");
    CHECK(set->mounts[0].unit == set->mounts[2].unit);
    CHECK(set->bytes == 4 + 5); // what is sent: the twice-mounted folder once
}

TEST_CASE("upload: over the size limit is one clear error naming the sizes and the file") {
    TempDir tmp;
    const fs::path w = tmp.path / "work";
    write_file(w / "a.bin", std::string(600, 'a'));
    write_file(w / "b.bin", std::string(600, 'b'));
    auto set = scan_uploads(spec_with_workdir(w), 1000);
    REQUIRE_FALSE(set);
    CHECK(set.error().kind == ErrorKind::invalid_spec);
    CHECK_THAT(set.error().message, Catch::Contains("over the limit (the limit is 0.0 MiB;"));
    CHECK_THAT(set.error().message, Catch::Contains("b.bin"));
    CHECK(set.error().message.find('\n') == std::string::npos);
    CHECK_THAT(set.error().hint, Catch::Contains("workdir_limit_mb"));
}

TEST_CASE("upload: a file that shrinks while it is sent stops the stream with its name") {
    TempDir tmp;
    const fs::path w = tmp.path / "work";
    write_file(w / "a.bin", std::string(4000, 'a'));
    auto set = scan_uploads(spec_with_workdir(w), 1 << 20);
    REQUIRE(set);
    write_file(w / "a.bin", "short");
    TarSource tar(tar_entries(set->units[0]));
    std::string buf(1024, '\0');
    Result<std::size_t> n = std::size_t{1};
    while (n && *n > 0) {
        n = tar.read(buf.data(), buf.size());
    }
    REQUIRE_FALSE(n);
    CHECK_THAT(n.error().message, Catch::Contains("a.bin changed while it was being sent"));
}

TEST_CASE("tar: the archive ends on a whole record so tar stops without waiting for the stream's end") {
    TempDir tmp;
    const fs::path w = tmp.path / "work";
    write_file(w / "a.txt", "a\n");
    write_file(w / "sub" / "b.bin", std::string(3000, 'b'));
    auto set = scan_uploads(spec_with_workdir(w), 1024 * 1024);
    REQUIRE(set);
    const std::string whole = archive(set->units[0]);
    CHECK(whole.size() % 10240 == 0);
    // Several units in one archive, each under its folder: what a Kubernetes pod receives.
    auto entries = tar_entries_under(set->units[0], "workdir");
    auto more = tar_entries_under(set->units[0], "mounts/0");
    entries.insert(entries.end(), more.begin(), more.end());
    TarSource tar(entries);
    std::string bundle, buf(4096, '\0');
    for (auto n = tar.read(buf.data(), buf.size()); n && *n > 0; n = tar.read(buf.data(), buf.size())) {
        bundle.append(buf.data(), *n);
    }
    CHECK(bundle.size() % 10240 == 0);
    const fs::path tar_file = tmp.path / "bundle.tar";
    std::ofstream(tar_file, std::ios::binary) << bundle;
    const fs::path out = tmp.path / "out";
    fs::create_directories(out);
    // The writer keeps the pipe open for 3 s after the archive (as an exec's stdin over v4 does): tar
    // must be done long before.
    const std::string script = "start=$(date +%s%N); (cat " + tar_file.string() + "; sleep 3) | (tar -x -f - -C " +
                               out.string() + " && echo $(( ($(date +%s%N) - start) / 1000000 )) > " +
                               (tmp.path / "ms").string() + ")";
    REQUIRE(run("bash -c '" + script + "'") == 0);
    const int ms = std::stoi(read_file(tmp.path / "ms"));
    CHECK(ms < 2000);
    CHECK(read_file(out / "workdir" / "a.txt") == "a\n");
    CHECK(read_file(out / "mounts" / "0" / "sub" / "b.bin") == std::string(3000, 'b'));
}
