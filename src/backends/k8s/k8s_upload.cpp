// A local workdir and file_mounts on Kubernetes (docs/ARCHITECTURE.md, "Code and data"). The pods are
// created with an emptyDir volume at /tandem and an init container, tandem-upload, that waits for
// /tandem/.tandem-complete (manifests.cpp). Launch then watches the job's pods and, as soon as a rank's
// upload container runs, sends it one tar stream over pods/exec (`tar -x` into /tandem, then the marker):
// the workdir as /tandem/workdir, mount k as /tandem/mounts/k. Only then does the pod's main container
// start; it copies each mount to its destination and runs setup and run in the workdir.
//
// What is not done here: content addressing (a pod's emptyDir starts empty, and nothing a namespace user
// can count on outlives a pod without a storage class: every launch sends everything, to every rank),
// and a retried pod (backoffLimit) cannot be fed again, so uploads refuse a backoff_limit above 0.

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "backends/k8s/job_state_pods.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
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

Status K8sBackend::send_uploads(const TaskSpec& spec, const JobPlan& plan, const upload::UploadSet& set) {
    (void)spec;
    const PodUpload& up = *plan.upload;
    // One archive for every pod: the workdir, then each mount in its staging folder.
    std::vector<upload::TarEntry> entries;
    if (set.workdir) {
        auto w = upload::tar_entries_under(set.units[*set.workdir], "workdir");
        entries.insert(entries.end(), w.begin(), w.end());
    }
    if (set.mounts.size() != up.mounts.size()) { // both list the local mounts in the spec's order
        return fail(ErrorKind::internal, fmt::format("{}: file_mounts changed while the job was prepared", m_cluster));
    }
    for (std::size_t k = 0; k < set.mounts.size(); ++k) {
        const auto& unit = set.units[set.mounts[k].unit];
        if (unit.single_file == up.mounts[k].file_name.empty()) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: file_mounts.{}: its source changed between a file and a folder while "
                                    "the job was prepared",
                                    m_cluster, up.mounts[k].destination));
        }
        auto m = upload::tar_entries_under(unit, fmt::format("mounts/{}", k), up.mounts[k].file_name);
        entries.insert(entries.end(), m.begin(), m.end());
    }
    const std::vector<std::string> command = {
        "/bin/sh", "-c",
        fmt::format("tar -x -f - -C {0} && touch {1}", k_upload_root, k_upload_complete)};

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
                return fail(ErrorKind::remote, fmt::format("{}: pod {} ended before it received the workdir and "
                                                           "file_mounts: {}",
                                                           m_cluster, name, why));
            }
            if (state == UploadReady::not_yet) {
                const auto why = detail::observe_pod(pod, {}).reason;
                waiting = fmt::format("rank {}: pod {}: {}", rank, name, why.empty() ? "starting" : why);
                continue;
            }
            upload::TarSource tar(entries);
            upload::ProgressLine line(
                fmt::format("{} to {} pod {}", set.workdir ? "workdir" : "file_mounts", m_cluster, name), set.bytes);
            std::string err;
            PodExecIo io;
            io.produce = [&](char* buffer, std::size_t capacity) -> Result<std::size_t> {
                auto n = tar.read(buffer, capacity);
                if (n) {
                    line.note(tar.content_bytes());
                }
                return n;
            };
            io.err = [&](std::string_view bytes) {
                if (err.size() < 4096) {
                    err.append(bytes);
                }
            };
            auto code = exec_in_pod(ns, name, std::string(k_upload_container), command, false, io);
            line.finish(tar.content_bytes());
            if (!code) {
                Error e = code.error();
                e.message = fmt::format("uploading to pod {}: {}", name, e.message);
                return tl::unexpected(e);
            }
            if (*code != 0) {
                return fail(ErrorKind::remote, fmt::format("{}: unpacking the workdir and file_mounts in pod {} "
                                                           "failed (exit {}): {}",
                                                           m_cluster, name, *code,
                                                           err.empty() ? "no message" : first_line(err)),
                            "the image needs /bin/sh and tar (as for kubectl cp)");
            }
            done.insert(rank);
        }
        if (static_cast<int>(done.size()) == plan.num_nodes) {
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            return fail(ErrorKind::timeout,
                        fmt::format("{}: no pod took the workdir and file_mounts within {} s ({})", m_cluster,
                                    up.wait_seconds, waiting),
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
