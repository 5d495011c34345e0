#pragma once
// Job groups on Slurm (core/job_group.hpp): a member's hosts are its allocation's nodes, and its address
// book is a file in the submitting user's home on the cluster (~/.tandem/groups/<channel>.env, the home
// the nodes share with the login node), written over SFTP and renamed into place, so the nodes' wrappers
// never read half of it. slurmrestd offers no way to write a file; a REST-only cluster cannot run group
// members that wait for addresses (the error says so before anything is submitted).

#include <optional>
#include <string>
#include <vector>

#include "backends/slurm/slurm_model.hpp"
#include "core/error.hpp"
#include "net/remote_host.hpp"

namespace tandem::slurm {

// The nodes of job `slurm_id` among `jobs` once it is RUNNING, in Slurm's order (node rank order);
// nullopt while it is not running yet. A node name that is not a plain host name is a remote error.
Result<std::optional<std::vector<std::string>>> running_hosts(const std::vector<SlurmJob>& jobs,
                                                              const std::string& slurm_id,
                                                              const std::string& cluster);

// Writes the book to <home>/.tandem/groups/<channel>.env.
Status publish_book(net::RemoteHost& host, const std::string& home, const std::string& channel,
                    const std::string& book, const std::string& cluster);

// Removes <home>/.tandem/groups/<channel>.env (a missing file is no error).
Status unpublish_book(net::RemoteHost& host, const std::string& home, const std::string& channel,
                      const std::string& cluster);

} // namespace tandem::slurm
