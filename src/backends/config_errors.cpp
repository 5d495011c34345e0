#include "backends/config_errors.hpp"

#include <fmt/format.h>

namespace tandem::backends {

std::string config_where(const ClusterConfig& c) {
    return c.loc.line > 0 ? fmt::format("{}:{}:{}: ", c.loc.file, c.loc.line, c.loc.column) : std::string{};
}

Error config_error(const ClusterConfig& c, const std::string& field, const std::string& message) {
    return Error{
        ErrorKind::config, fmt::format("{}clusters.{}.{}: {}", config_where(c), c.name, field, message), {}};
}

} // namespace tandem::backends
