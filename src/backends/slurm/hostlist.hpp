#pragma once
// Slurm hostlist expressions, as slurmctld reports them in partition and job node lists (every API
// version): "gpu[1-2]", "cpu[01-03,7],gpu1", "rack[1-2]-n[1-2]". Expanded in Slurm's own order, with
// zero padding kept ("cpu[01-03]" -> cpu01 cpu02 cpu03).

#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace tandem::slurm {

// Every host name of `hostlist`, in order. An empty list expands to nothing. Malformed brackets or
// ranges, and lists that would expand past `max_hosts`, are a `remote` error (they come from Slurm).
Result<std::vector<std::string>> expand_hostlist(std::string_view hostlist, std::size_t max_hosts = 65536);

} // namespace tandem::slurm
