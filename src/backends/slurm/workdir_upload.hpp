#pragma once
// A task's workdir, copied to the cluster over SFTP before the submit: every file and folder except
// `.git` and what the workdir's .gitignore files exclude, under a size limit (the cluster's
// workdir_limit_mb, default 100 MiB) checked before anything is sent. Executable files stay executable;
// symbolic links to files are copied as files, links to folders are skipped (no loops).

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/spec.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

struct WorkdirEntry {
    std::string relative; // '/'-separated, relative to the workdir
    bool is_dir = false;
    std::uint64_t size = 0;
    bool executable = false;
};

// What would be uploaded, folders before their contents. An `invalid_spec` error naming the size and the
// limit when the files add up to more than `limit_bytes`.
Result<std::vector<WorkdirEntry>> workdir_manifest(const std::string& local_dir, std::uint64_t limit_bytes);

// Uploads `local_dir` to `remote_dir` (made with its parents); returns the number of files sent.
Result<std::size_t> upload_workdir(net::RemoteHost& host, const std::string& local_dir,
                                   const std::string& remote_dir, std::uint64_t limit_bytes);

// For a cluster with both rest: and ssh: (control over REST): `spec` itself when there is no host or no
// workdir; else a copy whose workdir is the uploaded folder HOME/.tandem/workdirs/<random token>.
Result<TaskSpec> with_uploaded_workdir(net::RemoteHost* host, const TaskSpec& spec, const std::string& home,
                                       std::uint64_t limit_bytes, const std::string& cluster);

} // namespace tandem::slurm
