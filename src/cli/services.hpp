#pragma once
// Services as the CLI shows them (`tandem serve status`, and beside the jobs in `tandem status`): the
// store's records, each read back from its cluster (one backend call per cluster).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "core/service.hpp"

namespace tandem::cli {

struct ServiceRow {
    store::ServiceRecord record;
    ServiceView view;
    bool unreachable = false;
    std::string unreachable_reason;
};

// Every recorded service (or only `name`), as its cluster reports it now; with `replicas`, their pods.
Result<std::vector<ServiceRow>> service_rows(Context& ctx, const std::string& name, bool replicas);

nlohmann::json service_json(const ServiceRow& row);
// NAME CLUSTER VERSION READY REPLICAS ENDPOINT STATUS AGE
Table service_table(const std::vector<ServiceRow>& rows, std::int64_t now);

} // namespace tandem::cli
