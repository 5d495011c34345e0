#pragma once
// A task's workdir and local file_mounts, sent to a Slurm cluster over SSH (docs/ARCHITECTURE.md, "Code
// and data"). Each unit (upload_set.hpp) is unpacked once into a content-addressed cache under the
// submitting user's home, HOME/.tandem/cache/<hash>, from one tar stream on one SSH channel (one round
// trip per unit, not one per file); a unit already there is not sent again. The job then gets its own
// copy of the workdir (HOME/.tandem/workdirs/<submit token>, made on the cluster with cp), so jobs never
// see each other's writes; file_mounts are copied from the cache to their destinations by the job script
// on every node, before setup. The home folder is shared by the nodes (as for every Slurm-over-SSH job).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/slurm/slurm_model.hpp"
#include "backends/upload/upload_set.hpp"
#include "core/error.hpp"
#include "core/spec.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

struct UploadOutcome {
    std::optional<std::string> workdir;     // the job's own copy, when the task has a workdir
    std::vector<MountCopy> mounts;          // for SubmitPlan::file_mounts
    std::size_t units_sent = 0, units_cached = 0;
    std::uint64_t bytes_sent = 0;           // tar bytes on the wire
};

// "HOME/.tandem/cache".
std::string upload_cache_dir(const std::string& home);

// Sends what the cache lacks, then copies the workdir for the job named by `token` ("tandem-<hex>").
// Errors name the cluster; a cut stream leaves no unit that looks complete (a unit is unpacked into a
// partial folder and renamed into place only after tar has read the whole stream).
Result<UploadOutcome> send_uploads(net::RemoteHost& host, const std::string& home, const upload::UploadSet& set,
                                   const std::string& token, const std::string& cluster);

// For a cluster with both rest: and ssh: (control over REST, files over SSH), and for the SSH backend:
// scans `spec`'s uploads and sends them. `plan_mounts` receives the file_mounts copies; the returned
// spec's workdir is the job's remote copy. A spec without uploads comes back unchanged.
Result<TaskSpec> with_uploads(net::RemoteHost* host, const TaskSpec& spec, const std::string& home,
                              std::uint64_t limit_bytes, const std::string& token, const std::string& cluster,
                              std::vector<MountCopy>& plan_mounts);

} // namespace tandem::slurm
