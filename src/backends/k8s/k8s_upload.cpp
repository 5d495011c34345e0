// A local workdir and file_mounts on Kubernetes (docs/ARCHITECTURE.md, "Code and data"). The pods are
// created with an emptyDir volume at /tandem and an init container, tandem-upload, that waits for
// /tandem/.tandem-complete (manifests.cpp). Launch then watches the job's pods and, as soon as a rank's
// upload container runs, sends it one tar stream over pods/exec (`tar -x` into /tandem, then the marker):
// the workdir as /tandem/workdir, mount k as /tandem/mounts/k. Only then does the pod's main container
// start; it copies each mount to its destination and runs setup and run in the workdir.
//
// With upload_cache_claim (a PersistentVolumeClaim the team has, ReadWriteMany), the upload container
// also mounts it at /tandem-cache, and each unit is content-addressed there as over SSH
// (/tandem-cache/tandem-units/<hash>): launch asks which units the pod sees, sends only the missing ones
// (each unpacked into a partial folder and renamed into place), then one exec copies the units into
// /tandem. Without a claim every launch sends everything, to every rank: an emptyDir starts empty.
// A retried pod (backoffLimit) could not be fed again, so uploads refuse a backoff_limit above 0.

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backends/k8s/job_state_pods.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/upload/mount_script.hpp"
#include "backends/upload/progress.hpp"
#include "backends/upload/tar_stream.hpp"

namespace tandem::k8s {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Whether the pod's upload container is running (so an exec into it can be made), or why not yet.
enum class UploadReady { not_yet, running, ended };

UploadReady upload_container_state(const json& pod) {
    const auto phase = fields::str_at(pod, "status", "phase");
    if (phase == "Failed" || phase == "Succeeded") {
        return UploadReady::ended;
    }
    const json* list = fields::at(pod, "status", "initContainerStatuses");
    if (list == nullptr || !list->is_array()) {
        return UploadReady::not_yet;
    }
    for (const auto& cs : *list) {
        if (fields::str_at(cs, "name") != k_upload_container) {
            continue;
        }
        if (fields::at(cs, "state", "running") != nullptr) {
            return UploadReady::running;
        }
        if (fields::at(cs, "state", "terminated") != nullptr) {
            return UploadReady::ended;
        }
    }
    return UploadReady::not_yet;
}

std::string first_line(const std::string& text) {
    return detail::one_line(text.substr(0, text.find('\n')));
}

} // namespace

Result<std::optional<PodUpload>> K8sBackend::pod_upload(const TaskSpec& spec) const {
    PodUpload up;
    up.workdir = spec.workdir.has_value();
    up.wait_seconds = m_settings.upload_wait_seconds;
    up.cache_claim = m_settings.upload_cache_claim;
    for (const auto& [destination, value] : spec.file_mounts) {
        auto source = upload::local_mount_source(value);
        if (!source) {
            continue; // object stores: refused by check_backend_support
        }
        PodUpload::Mount m;
        m.destination = destination;
        m.staged = fmt::format("{}/mounts/{}", k_upload_root, up.mounts.size());
        std::error_code ec;
        if (!fs::is_directory(*source, ec)) {
            m.file_name = fs::path(*source).filename().string();
            if (m.file_name.empty() || m.file_name == "." || m.file_name == "..") {
                m.file_name = "file";
            }
            m.staged += "/" + m.file_name;
        }
        up.mounts.push_back(std::move(m));
    }
    if (!up.workdir && up.mounts.empty()) {
        return std::optional<PodUpload>();
    }
    if (spec.kubernetes.backoff_limit.value_or(0) > 0) {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("{}: config.kubernetes.backoff_limit: {} retries would start pods without the "
                                "workdir and file_mounts (tandem sends them once, at launch)",
                                m_cluster, *spec.kubernetes.backoff_limit),
                    "use backoff_limit: 0, or a git workdir (workdir: {url: ...}) that every pod clones");
    }
    return std::optional<PodUpload>(std::move(up));
}

namespace {

// Where the units live on a cache claim, and the two commands the upload container runs with it.
constexpr std::string_view k_units = "/tandem-cache/tandem-units";

// $1: a unit's hash. Unpacked into a partial folder, renamed into place only once tar read the whole
// stream; a unit that appeared meanwhile (another launch) wins, and the partial copy is removed.
constexpr std::string_view k_receive_unit =
    "set -e; c=/tandem-cache/tandem-units; mkdir -p \"$c\"; p=\"$c/.partial-$1-$$\"; trap 'rm -rf \"$p\"' EXIT; "
    "mkdir -p \"$p\"; tar -x -f - -C \"$p\"; [ -d \"$c/$1\" ] || mv -T \"$p\" \"$c/$1\" 2>/dev/null || "
    "[ -d \"$c/$1\" ] || mv \"$p\" \"$c/$1\"";

// Four words per unit use (dir|file, hash, where in /tandem, a single file's name in the unit): copies
// it from the cache, touches the unit (a cleaner can drop the least recently used), then the marker.
constexpr std::string_view k_assemble =
    "set -e; c=/tandem-cache/tandem-units\n"
    "while [ \"$#\" -ge 4 ]; do\n"
    "  if [ \"$1\" = dir ]; then mkdir -p \"$3\"; cp -a \"$c/$2/.\" \"$3/\";\n"
    "  else mkdir -p \"$(dirname \"$3\")\"; cp -a \"$c/$2/$4\" \"$3\"; fi\n"
    "  touch \"$c/$2\"; shift 4\n"
    "done\n"
    "touch /tandem/.tandem-complete";

} // namespace

Result<std::set<std::string>> K8sBackend::cached_units(const std::string& ns, const std::string& pod,
                                                       const upload::UploadSet& set) {
    std::string script = fmt::format("mkdir -p {0} && cd {0} && {{ {1}}} && for h in", k_units,
                                     upload::cache_prune_script());
    for (const auto& u : set.units) {
        script += " " + u.hash; // hex digits
    }
    script += "; do if [ -d \"$h\" ]; then echo \"$h\"; fi; done";
    std::string out;
    upload::ErrorText err;
    PodExecIo io;
    io.out = [&](std::string_view b) {
        if (out.size() < 64 * 1024) {
            out.append(b);
        }
    };
    io.err = [&](std::string_view b) { err.append(b); };
    auto code = exec_in_pod(ns, pod, std::string(k_upload_container), {"/bin/sh", "-c", script}, false, io);
    if (!code) {
        return tl::unexpected(code.error());
    }
    if (*code != 0) {
        return fail(ErrorKind::remote, fmt::format("{}: the upload cache {} in pod {} cannot be used (exit {}): {}",
                                                   m_cluster, k_upload_cache, pod, *code,
                                                   err.text.empty() ? "no message" : first_line(err.text)));
    }
    std::set<std::string> present;
    std::size_t at = 0;
    while (at < out.size()) {
        auto end = out.find('\n', at);
        end = end == std::string::npos ? out.size() : end;
        present.insert(out.substr(at, end - at));
        at = end + 1;
    }
    return present;
}

Result<std::uint64_t> K8sBackend::stream_to_pod(const std::string& ns, const std::string& pod,
                                                std::vector<upload::TarEntry> entries,
                                                const std::vector<std::string>& command, const std::string& what,
                                                std::uint64_t bytes) {
    upload::TarFeed feed(std::move(entries), fmt::format("{} to {} pod {}", what, m_cluster, pod), bytes);
    upload::ErrorText err;
    PodExecIo io;
    io.produce = [&](char* buffer, std::size_t capacity) { return feed.read(buffer, capacity); };
    io.err = [&](std::string_view b) { err.append(b); };
    auto code = exec_in_pod(ns, pod, std::string(k_upload_container), command, false, io);
    feed.finish();
    if (!code) {
        Error e = code.error();
        e.message = fmt::format("uploading {} to pod {}: {}", what, pod, e.message);
        return tl::unexpected(e);
    }
    if (*code != 0) {
        return fail(ErrorKind::remote, fmt::format("{}: unpacking {} in pod {} failed (exit {}): {}", m_cluster, what,
                                                   pod, *code, err.text.empty() ? "no message" : first_line(err.text)),
                    "the image needs /bin/sh and tar (as for kubectl cp)");
    }
    return feed.wire_bytes();
}

Status K8sBackend::send_uploads(const TaskSpec& spec, const JobPlan& plan, const upload::UploadSet& set) {
    (void)spec;
    const PodUpload& up = *plan.upload;
    if (set.mounts.size() != up.mounts.size()) { // both list the local mounts in the spec's order
        return fail(ErrorKind::internal, fmt::format("{}: file_mounts changed while the job was prepared", m_cluster));
    }
    for (std::size_t k = 0; k < set.mounts.size(); ++k) {
        if (set.units[set.mounts[k].unit].single_file == up.mounts[k].file_name.empty()) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: file_mounts.{}: its source changed between a file and a folder while "
                                    "the job was prepared",
                                    m_cluster, up.mounts[k].destination));
        }
    }
    const std::string what = set.workdir ? "workdir" : "file_mounts";
    // Without a cache, one archive for every pod: the workdir, then each mount in its staging folder.
    std::vector<upload::TarEntry> bundle;
    if (up.cache_claim.empty()) {
        if (set.workdir) {
            auto w = upload::tar_entries_under(set.units[*set.workdir], "workdir");
            bundle.insert(bundle.end(), w.begin(), w.end());
        }
        for (std::size_t k = 0; k < set.mounts.size(); ++k) {
            auto m = upload::tar_entries_under(set.units[set.mounts[k].unit], fmt::format("mounts/{}", k),
                                               up.mounts[k].file_name);
            bundle.insert(bundle.end(), m.begin(), m.end());
        }
    }
    // With a cache: what each unit use becomes in /tandem (the assemble script's arguments).
    std::vector<std::string> assemble = {"/bin/sh", "-c", std::string(k_assemble), "tandem-upload"};
    auto use = [&](const upload::Unit& unit, const std::string& where, const std::string& file_name) {
        assemble.push_back(unit.single_file ? "file" : "dir");
        assemble.push_back(unit.hash);
        assemble.push_back(unit.single_file ? where + "/" + file_name : where);
        assemble.push_back(unit.single_file ? unit.items.front().relative : "-");
    };
    if (set.workdir) {
        use(set.units[*set.workdir], fmt::format("{}/workdir", k_upload_root), "");
    }
    for (std::size_t k = 0; k < set.mounts.size(); ++k) {
        use(set.units[set.mounts[k].unit], fmt::format("{}/mounts/{}", k_upload_root, k), up.mounts[k].file_name);
    }

    auto feed = [&](const std::string& ns, const std::string& pod) -> Status {
        if (up.cache_claim.empty()) {
            auto sent = stream_to_pod(ns, pod, bundle,
                                      {"/bin/sh", "-c",
                                       fmt::format("tar -x -f - -C {0} && touch {1}", k_upload_root, k_upload_complete)},
                                      what, set.bytes);
            if (!sent) {
                return tl::unexpected(sent.error());
            }
            return {};
        }
        auto present = cached_units(ns, pod, set);
        if (!present) {
            return tl::unexpected(present.error());
        }
        for (const auto& unit : set.units) {
            if (present->count(unit.hash)) {
                continue;
            }
            auto sent = stream_to_pod(ns, pod, upload::tar_entries(unit),
                                      {"/bin/sh", "-c", std::string(k_receive_unit), "tandem-upload", unit.hash},
                                      unit.label, unit.bytes);
            if (!sent) {
                return tl::unexpected(sent.error());
            }
        }
        upload::ErrorText err;
        PodExecIo io;
        io.err = [&](std::string_view b) { err.append(b); };
        auto code = exec_in_pod(ns, pod, std::string(k_upload_container), assemble, false, io);
        if (!code) {
            return tl::unexpected(code.error());
        }
        if (*code != 0) {
            return fail(ErrorKind::remote, fmt::format("{}: copying the {} from the upload cache in pod {} failed "
                                                       "(exit {}): {}",
                                                       m_cluster, what, pod, *code,
                                                       err.text.empty() ? "no message" : first_line(err.text)));
        }
        return {};
    };

    const auto& ns = plan.namespace_name;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(up.wait_seconds);
    std::set<int> done;
    std::string last_wait;
    while (static_cast<int>(done.size()) < plan.num_nodes) {
        auto pods = rank_pods(ns, plan.base_name);
        if (!pods) {
            return tl::unexpected(pods.error());
        }
        std::string waiting;
        for (int rank = 0; rank < plan.num_nodes; ++rank) {
            if (done.count(rank)) {
                continue;
            }
            auto it = pods->find(rank);
            if (it == pods->end()) {
                waiting = fmt::format("rank {}: waiting for the Job controller to create its pod", rank);
                continue;
            }
            const json& pod = it->second;
            const std::string name = fields::str_at(pod, "metadata", "name");
            const auto state = upload_container_state(pod);
            if (state == UploadReady::ended) {
                const auto why = detail::observe_pod(pod, {}).reason;
                return fail(ErrorKind::remote, fmt::format("{}: pod {} ended before it received the {}: {}",
                                                           m_cluster, name, what, why));
            }
            if (state == UploadReady::not_yet) {
                const auto why = detail::observe_pod(pod, {}).reason;
                waiting = fmt::format("rank {}: pod {}: {}", rank, name, why.empty() ? "starting" : why);
                continue;
            }
            if (auto ok = feed(ns, name); !ok) {
                return ok;
            }
            done.insert(rank);
        }
        if (static_cast<int>(done.size()) == plan.num_nodes) {
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            return fail(ErrorKind::timeout,
                        fmt::format("{}: no pod took the {} within {} s ({})", m_cluster, what, up.wait_seconds,
                                    waiting),
                        "raise upload_wait_seconds for the cluster in config.yaml, or launch where pods start "
                        "sooner");
        }
        if (upload::progress_wanted() && waiting != last_wait) {
            last_wait = waiting;
            upload::progress("waiting for the upload: " + waiting, false);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return {};
}

} // namespace tandem::k8s
