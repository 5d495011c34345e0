// A local workdir and file_mounts on Kubernetes, through the real binary: the pods' upload container
// (an init container on an emptyDir) receives one tar stream over pods/exec through the real API server
// and the node agent's kubelet endpoint, as the namespace-only certificate user. The bytes are counted
// by a relay in front of the API server, which also cuts an upload halfway.

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "k8s_testbed.hpp"
#include "tcp_relay.hpp"

using namespace tandem_test;
namespace fs = std::filesystem;

namespace {

std::string random_blob(std::size_t n) {
    std::mt19937_64 gen(std::random_device{}());
    std::string out(n, '\0');
    for (auto& c : out) {
        c = static_cast<char>(gen() & 0xff);
    }
    return out;
}

// The certificate user's kubeconfig with the server moved to the relay's port (the API server's
// certificate names 127.0.0.1, so TLS still verifies).
std::string kubeconfig_through(TempHome& home, int port) {
    std::ifstream in(k8s_setting("K8S_KUBECONFIG_CERT"));
    std::stringstream text;
    text << in.rdbuf();
    std::string config = text.str();
    const std::string server = k8s_setting("K8S_SERVER");
    const auto at = config.find(server);
    REQUIRE(at != std::string::npos);
    config.replace(at, server.size(), "https://127.0.0.1:" + std::to_string(port));
    const std::string path = home.root() + "/relay-kubeconfig";
    std::ofstream(path) << config;
    return path;
}

int api_port() {
    const std::string server = k8s_setting("K8S_SERVER");
    return std::stoi(server.substr(server.rfind(':') + 1));
}

std::string sha_prefix(const std::string& path) {
    auto r = run({"/bin/sh", "-c", "sha256sum \"$0\" | cut -c1-16", path});
    return r.out.substr(0, 16);
}

} // namespace

TEST_CASE("k8s: a workdir and two file_mounts reach every rank of 1 and 2 nodes without .git or ignored files") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_CERT"));
    const std::string tag = std::to_string(::getpid());
    lab.home.write("project/train.py", "print('train')\n");
    lab.home.write("project/blob.bin", random_blob(200 * 1024));
    lab.home.write("project/.gitignore", "*.ckpt\n");
    lab.home.write("project/model.ckpt", "ignored");
    lab.home.write("project/.git/HEAD", "ref: refs/heads/main\n");
    lab.home.write("project/tools/run.sh", "#!/bin/sh\necho tool-ran\n");
    fs::permissions(lab.home.root() + "/project/tools/run.sh", fs::perms::owner_exec, fs::perm_options::add);
    lab.home.write("data/a.csv", "1,2\n");
    lab.home.write("data/sub/b.csv", "3,4\n");
    lab.home.write("cfg.yaml", "lr: 0.1\n");
    // Absolute (on the node agent's host every pod shares, so unique per run) and relative to the home.
    const std::string data_dest = "/tmp/tandem-k8s-fm-" + tag + "/data";
    const std::string cfg_dest = "fm/cfg.yaml";
    const std::string run =
        "run: |\n"
        "  echo \"rank $TANDEM_NODE_RANK: $(cat " + data_dest + "/a.csv " + data_dest +
        "/sub/b.csv ~/" + cfg_dest + " | tr '\\n' ' ')\"\n"
        "  ls -a | tr '\\n' ' '; echo\n"
        "  ./tools/run.sh\n"
        "  sha256sum blob.bin | cut -c1-16\n";
    const std::string mounts = "file_mounts:\n  " + data_dest + ": data\n  " + cfg_dest + ": cfg.yaml\n";
    const std::string blob_hash = sha_prefix(lab.home.root() + "/project/blob.bin");

    auto one = lab.task("one", "name: k8s-uploads-one\nworkdir: project\n" + mounts + run);
    auto first = lab.tandem({"launch", one});
    INFO(first);
    REQUIRE(first.exit_code == 0);
    CHECK(contains(first.out, "rank 0: 1,2 3,4 lr: 0.1"));
    CHECK(contains(first.out, ". .. .gitignore blob.bin tools train.py"));
    CHECK(contains(first.out, "tool-ran")); // the executable bit survives
    CHECK(contains(first.out, blob_hash));
    CHECK(first.err.find("uploading") == std::string::npos); // stderr is not a terminal: no progress line

    auto two = lab.task("two", "name: k8s-uploads-two\nnum_nodes: 2\nworkdir: project\n" + mounts + run);
    auto second = lab.tandem({"launch", two});
    INFO(second);
    REQUIRE(second.exit_code == 0);
    CHECK(contains(second.out, "[rank 0] rank 0: 1,2 3,4 lr: 0.1"));
    CHECK(contains(second.out, "[rank 1] rank 1: 1,2 3,4 lr: 0.1"));
    CHECK(contains(second.out, "[rank 1] " + blob_hash));

    // The manifest says what a reviewer of the Job would look for.
    auto pods = objects_of("pods", lab.base_of(2));
    REQUIRE(pods.size() == 2);
    const auto& spec = pods[0]["spec"];
    CHECK(spec["initContainers"][0]["name"] == "tandem-upload");
    CHECK(spec["volumes"][0]["emptyDir"].is_object());
    CHECK(pods[0]["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0);
    std::error_code ec;
    fs::remove_all("/tmp/tandem-k8s-fm-" + tag, ec);
}

TEST_CASE("k8s: an upload cut halfway fails the job before it starts with one clear line and takes it back") {
    TempHome scratch;
    TcpRelay relay(api_port());
    K8sHome lab(kubeconfig_through(scratch, relay.port()));
    lab.home.write("cut/blob.bin", random_blob(24 * 1024 * 1024));
    auto file = lab.task("cut", "name: k8s-upload-cut\nworkdir: cut\nrun: sha256sum blob.bin | cut -c1-16\n");
    std::atomic<std::uint64_t> start{relay.bytes_up()};
    std::atomic<bool> done{false};
    std::thread cutter([&] {
        while (!done && relay.bytes_up() - start < 4 * 1024 * 1024) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        relay.cut_all();
    });
    auto cut = lab.tandem({"launch", file});
    done = true;
    cutter.join();
    INFO(cut);
    CHECK(cut.exit_code != 0);
    auto errors = cut.err_lines_starting("tandem: error: ");
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "uploading workdir to pod"));
    CHECK_FALSE(contains(cut.err, "may have taken it"));
    auto job = lab.job(1);
    CHECK(job["state"] == "FAILED");
    CHECK(contains(job["reason"].get<std::string>(), "uploading workdir to pod"));
    CHECK(wait_all_gone(lab.base_of(1)).empty()); // the Job and its pod were taken back

    // The next launch sends it all, and the job reads every byte.
    auto again = lab.tandem({"launch", file});
    INFO(again);
    REQUIRE(again.exit_code == 0);
    CHECK(contains(again.out, sha_prefix(lab.home.root() + "/cut/blob.bin")));
}

TEST_CASE("k8s: uploads refuse what cannot work before anything is created") {
    K8sHome lab(k8s_setting("K8S_KUBECONFIG_CERT"));
    lab.home.write("w/a.txt", "a\n");
    auto retry = lab.task("retry", "name: k8s-upload-retry\nworkdir: w\nrun: cat a.txt\n"
                                   "config:\n  kubernetes:\n    backoff_limit: 2\n");
    auto r = lab.tandem({"launch", retry});
    INFO(r);
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, "config.kubernetes.backoff_limit: 2 retries would start pods without the workdir"));
    auto store = lab.task("store", "name: k8s-upload-store\nrun: true\nfile_mounts:\n  /data: s3://bucket/data\n");
    auto s = lab.tandem({"launch", store});
    CHECK(s.exit_code != 0);
    CHECK(contains(s.err, "s3://bucket/data is an object store"));
}

TEST_CASE("k8s: with upload_cache_claim an unchanged workdir is not sent again and a second rank takes it from "
          "the cache") {
    TempHome scratch;
    TcpRelay relay(api_port());
    K8sHome lab(kubeconfig_through(scratch, relay.port()), "",
                "    upload_cache_claim: " + k8s_setting("K8S_UPLOAD_CACHE_CLAIM") + "\n");
    // Content of its own (the claim outlives a test run): the first launch must send it.
    const std::string blob = random_blob(2 * 1024 * 1024);
    lab.home.write("project/blob.bin", blob);
    lab.home.write("project/train.py", "print('train')\n");
    lab.home.write("settings.yaml", "lr: 0.2\n");
    const std::string run = "file_mounts:\n  ~/conf/s.yaml: settings.yaml\nrun: |\n"
                            "  echo \"rank $TANDEM_NODE_RANK: $(cat ~/conf/s.yaml) $(ls | tr '\\n' ' ')\"\n"
                            "  sha256sum blob.bin | cut -c1-16\n";
    const std::string hash = sha_prefix(lab.home.root() + "/project/blob.bin");
    auto one = lab.task("one", "name: k8s-cache-one\nworkdir: project\n" + run);
    // Housekeeping on the claim too: a unit unused for 40 days goes, a recent one stays.
    const std::string units = k8s_setting("K8S_UPLOAD_CACHE_DIR") + "/tandem-units/";
    const std::string stale = units + "00112233445566778899aabbccddeeff";
    const std::string recent = units + "ffeeddccbbaa99887766554433221100";
    REQUIRE(tandem_test::run({"/bin/sh", "-c", "mkdir -p \"$1\" \"$2\" && touch -d '40 days ago' \"$1\"", "sh", stale, recent})
                .exit_code == 0);
    const auto before = relay.bytes_up();
    auto first = lab.tandem({"launch", one});
    INFO(first);
    REQUIRE(first.exit_code == 0);
    const auto first_bytes = relay.bytes_up() - before;
    CHECK(contains(first.out, "rank 0: lr: 0.2 blob.bin train.py"));
    CHECK(contains(first.out, hash));
    CHECK(first_bytes > blob.size());
    CHECK_FALSE(fs::exists(stale));
    CHECK(fs::exists(recent));

    // The same files on two ranks: neither pod is sent them again, both copy them from the claim.
    auto two = lab.task("two", "name: k8s-cache-two\nnum_nodes: 2\nworkdir: project\n" + run);
    const auto middle = relay.bytes_up();
    auto second = lab.tandem({"launch", two});
    INFO(second);
    REQUIRE(second.exit_code == 0);
    const auto second_bytes = relay.bytes_up() - middle;
    CHECK(contains(second.out, "[rank 0] rank 0: lr: 0.2 blob.bin train.py"));
    CHECK(contains(second.out, "[rank 1] rank 1: lr: 0.2 blob.bin train.py"));
    CHECK(contains(second.out, "[rank 1] " + hash));
    CHECK(second_bytes < 200 * 1024);

    // A claim that does not exist is said before anything is created.
    K8sHome missing(k8s_setting("K8S_KUBECONFIG_CERT"), "", "    upload_cache_claim: no-such-claim\n");
    missing.home.write("w/a.txt", "a\n");
    auto r = missing.tandem({"launch", missing.task("m", "name: k8s-cache-missing\nworkdir: w\nrun: cat a.txt\n")});
    CHECK(r.exit_code != 0);
    CHECK(contains(r.err, "upload_cache_claim: there is no PersistentVolumeClaim no-such-claim in namespace"));
}
