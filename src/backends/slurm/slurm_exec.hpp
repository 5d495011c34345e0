#pragma once
// `tandem exec` and `tandem shell` on Slurm: `srun --jobid=ID --overlap` on the job's node of the asked
// rank, over the cluster's SSH connection (slurmrestd has no interactive steps). Shared by both Slurm
// backends (the REST one needs `ssh:` for it).

#include <string>

#include "core/backend.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

// `nodes`: the job's node names in rank order (hosts()).
Result<int> exec_beside_job(net::RemoteHost& host, const JobRecord& job, const std::vector<std::string>& nodes,
                            const ExecRequest& request, ExecIo& io, const std::string& cluster);

} // namespace tandem::slurm
