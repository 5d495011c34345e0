#pragma once
// `tandem exec` and `tandem shell` on Slurm: `srun --jobid=ID --overlap` on the job's node of the asked
// rank, over the cluster's SSH connection (slurmrestd has no interactive steps). Shared by both Slurm
// backends (the REST one needs `ssh:` for it).

#include <string>

#include "core/backend.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

// `running_nodes`: hosts() of the job: its node names in rank order, nullopt while it is not running.
Result<int> exec_beside_job(net::RemoteHost& host, const JobRecord& job,
                            const Result<std::optional<std::vector<std::string>>>& running_nodes,
                            const ExecRequest& request, ExecIo& io, const std::string& cluster);

} // namespace tandem::slurm
