#pragma once
// A backend's last inventory, kept in STATE/cache so that `launch` can plan on a view up to 30 s old
// instead of paying the round trips again (plan and infra ask fresh). `source` names where the view came
// from (a URL, ssh://user@host:port, an API server): a cluster whose settings changed never reads the
// view of what it was before.

#include <chrono>
#include <optional>
#include <string>

#include "core/inventory.hpp"

namespace tandem::backends {

// nullopt when the file is missing, unreadable, from another source, or older than max_age.
std::optional<ClusterInventory> read_inventory_cache(const std::string& file, const std::string& source,
                                                     const std::string& cluster, BackendKind kind,
                                                     std::chrono::seconds max_age);
// Written whole and renamed into place, so a concurrent reader never sees half a file. Best effort: a
// cache that cannot be written is only a slower next launch.
void write_inventory_cache(const std::string& file, const std::string& source, const ClusterInventory& inv);

} // namespace tandem::backends
