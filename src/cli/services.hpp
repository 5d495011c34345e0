#pragma once
// Services as the CLI shows them (`tandem serve status`, and beside the jobs in `tandem status`); the rows
// come from app/services.hpp.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/services.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"
#include "core/service.hpp"

namespace tandem::cli {

using app::ServiceRow;
using app::service_rows;

nlohmann::json service_json(const ServiceRow& row);
// NAME CLUSTER VERSION READY REPLICAS ENDPOINT STATUS AGE
Table service_table(const std::vector<ServiceRow>& rows, std::int64_t now);

} // namespace tandem::cli
