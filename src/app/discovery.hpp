#pragma once
// Discovery (issue 31: the clusters are the record). `status` asks every cluster written in config.yaml
// that keeps a record of its own (Slurm, Kubernetes: the Discovery capability) for the jobs tandem made
// there, with one list call per cluster, all at once. A job the cluster says is the caller's and the store
// does not hold is adopted: it becomes a row with a local id of its own, tracked from then on like any
// other (logs, cancel, exec, --exit-code), its cluster the source of truth. A group member brings its
// group back (a row made from what its members tell, which this store watches but does not drive). A job
// of another user is shown (--all-users), never adopted, whatever its identity claims.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/session.hpp"

namespace tandem::app {

// A job of another user a cluster listed (--all-users): shown, not stored.
struct ClusterJob {
    JobRecord record; // as it would be stored (id 0)
    std::string owner;
};

struct DiscoveryReport {
    std::vector<std::int64_t> adopted;                 // rows made, in the clusters' order
    std::vector<ClusterJob> others;                    // with all_users: every other user's job
    std::map<std::string, std::string> owners;         // owner_key(cluster, remote id) -> the job's user
    std::map<std::string, std::string> me;             // cluster -> the cluster's notion of the caller
    std::vector<std::string> problems;                 // "cluster: why", one per cluster that could not tell
};

std::string owner_key(const std::string& cluster, const std::string& remote_id);

// Asks the clusters (all of them, or `only` that one) and adopts what is the caller's and new.
DiscoveryReport discover_jobs(Session& session, bool all_users, const std::optional<std::string>& only = {});

} // namespace tandem::app
