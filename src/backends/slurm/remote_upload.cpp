#include "backends/slurm/remote_upload.hpp"

#include <set>

#include <fmt/format.h>

#include "backends/slurm/script_quoting.hpp"
#include "backends/upload/mount_script.hpp"
#include "backends/upload/progress.hpp"
#include "backends/upload/tar_stream.hpp"

namespace tandem::slurm {

namespace {

std::string first_line(const std::string& text) {
    const auto end = text.find('\n');
    return text.substr(0, end);
}

Result<std::set<std::string>> cached_units(net::RemoteHost& host, const std::string& cache,
                                           const upload::UploadSet& set, const std::string& cluster) {
    std::string hashes;
    for (const auto& u : set.units) {
        hashes += " " + u.hash; // hex digits only: no quoting needed
    }
    auto r = host.exec(fmt::format("mkdir -p {0} && cd {0} && {{ {2}}} && for h in{1}; do if [ -d \"$h\" ]; then "
                                   "echo \"$h\"; fi; done",
                                   shell_quote(cache), hashes, upload::cache_prune_script()));
    if (!r) {
        Error e = r.error();
        e.message = fmt::format("cluster {}: {}", cluster, e.message);
        return tl::unexpected(e);
    }
    if (r->exit_status != 0) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: cannot make {} on the cluster: {}", cluster, cache,
                                                   first_line(r->err)));
    }
    std::set<std::string> present;
    std::size_t at = 0;
    while (at < r->out.size()) {
        auto end = r->out.find('\n', at);
        end = end == std::string::npos ? r->out.size() : end;
        present.insert(r->out.substr(at, end - at));
        at = end + 1;
    }
    return present;
}

Result<std::uint64_t> send_unit(net::RemoteHost& host, const std::string& cache, const upload::Unit& unit,
                                const std::string& cluster) {
    // Unpacked into a partial folder, renamed into place only once tar has read the whole stream: a cut
    // upload leaves nothing that looks complete. Two launches sending the same unit at once both unpack;
    // the second rename fails and its copy is removed.
    const std::string command = fmt::format(
        "set -e; c={0}; p=\"$c/.partial-{1}-$$\"; trap 'rm -rf \"$p\"' EXIT; mkdir -p \"$p\"; "
        "tar -x -f - -C \"$p\"; mv -T \"$p\" \"$c/{1}\" 2>/dev/null || true",
        shell_quote(cache), unit.hash);
    upload::TarFeed feed(upload::tar_entries(unit), fmt::format("{} to {}", unit.label, cluster), unit.bytes);
    upload::ErrorText err;
    net::ExecStreams io;
    io.produce = [&](char* buffer, std::size_t capacity) { return feed.read(buffer, capacity); };
    io.err = [&](std::string_view bytes) { err.append(bytes); };
    auto status = host.exec_streaming(command, io);
    feed.finish();
    if (!status) {
        Error e = status.error();
        e.message = fmt::format("cluster {}: uploading {}: {}", cluster, unit.label, e.message);
        return tl::unexpected(e);
    }
    if (*status != 0) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: unpacking {} on the cluster failed (exit {}): {}",
                                                   cluster, unit.label, *status, first_line(err.text)));
    }
    return feed.wire_bytes();
}

} // namespace

std::string upload_cache_dir(const std::string& home) {
    return home + "/.tandem/cache";
}

Result<UploadOutcome> send_uploads(net::RemoteHost& host, const std::string& home, const upload::UploadSet& set,
                                   const std::string& token, const std::string& cluster) {
    UploadOutcome out;
    if (set.empty()) {
        return out;
    }
    const std::string cache = upload_cache_dir(home);
    auto present = cached_units(host, cache, set, cluster);
    if (!present) {
        return tl::unexpected(present.error());
    }
    for (const auto& unit : set.units) {
        if (present->count(unit.hash)) {
            ++out.units_cached;
            continue;
        }
        auto sent = send_unit(host, cache, unit, cluster);
        if (!sent) {
            return tl::unexpected(sent.error());
        }
        out.bytes_sent += *sent;
        ++out.units_sent;
    }
    // The job's own workdir, copied on the cluster; every unit used is touched (a cache cleaner can
    // drop the least recently used).
    std::string command = "set -e";
    for (const auto& unit : set.units) {
        command += fmt::format("; touch {}", shell_quote(cache + "/" + unit.hash));
    }
    if (set.workdir) {
        const std::string workdir = fmt::format("{}/.tandem/workdirs/{}", home, token);
        command += fmt::format("; mkdir -p {0}; cp -a --reflink=auto {1}/. {0}/", shell_quote(workdir),
                               shell_quote(cache + "/" + set.units[*set.workdir].hash));
        out.workdir = workdir;
    }
    auto r = host.exec(command);
    if (!r) {
        Error e = r.error();
        e.message = fmt::format("cluster {}: {}", cluster, e.message);
        return tl::unexpected(e);
    }
    if (r->exit_status != 0) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: copying the workdir on the cluster failed: {}",
                                                   cluster, first_line(r->err)));
    }
    for (const auto& m : set.mounts) {
        const auto& unit = set.units[m.unit];
        std::string source = cache + "/" + unit.hash;
        if (unit.single_file) {
            source += "/" + unit.items.front().relative;
        }
        out.mounts.push_back(MountCopy{source, m.destination, unit.single_file});
    }
    return out;
}

Result<TaskSpec> with_uploads(net::RemoteHost* host, const TaskSpec& spec, const std::string& home,
                              std::uint64_t limit_bytes, const std::string& token, const std::string& cluster,
                              std::vector<MountCopy>& plan_mounts) {
    bool local_mounts = false;
    for (const auto& [destination, value] : spec.file_mounts) {
        local_mounts = local_mounts || upload::local_mount_source(value).has_value();
    }
    if (host == nullptr) {
        if (local_mounts) {
            return tl::unexpected(before_submit(Error(ErrorKind::invalid_spec,
                        fmt::format("cluster {}: file_mounts need ssh: in the cluster's config (slurmrestd "
                                    "carries no files, and tandem has no other way onto the cluster)",
                                    cluster),
                        "add ssh: to the cluster in config.yaml, or copy the files in setup")));
        }
        return spec; // a workdir over REST alone is used in place (a shared filesystem)
    }
    if (!spec.workdir && !local_mounts) {
        return spec;
    }
    // Whatever fails here fails before sbatch: nothing was created on the cluster, so the launch never
    // records the job as possibly submitted (and does not send the same files to the next pool).
    auto set = upload::scan_uploads(spec, limit_bytes);
    if (!set) {
        Error e = set.error();
        e.message = fmt::format("cluster {}: {}", cluster, e.message);
        return tl::unexpected(before_submit(e));
    }
    auto sent = send_uploads(*host, home, *set, token, cluster);
    if (!sent) {
        return tl::unexpected(before_submit(sent.error()));
    }
    TaskSpec copy = spec;
    if (sent->workdir) {
        copy.workdir = *sent->workdir;
    }
    plan_mounts = std::move(sent->mounts);
    return copy;
}

} // namespace tandem::slurm
