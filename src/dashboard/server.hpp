#pragma once
// `tandem dashboard`'s page server (the helper program's runner, cli/dashboard.hpp).

#include "cli/dashboard.hpp"

namespace tandem::dashboard {

// Binds, prints the URL with its token on stdout and serves until the process is stopped (Ctrl-C).
Result<int> serve(app::Session& session, const cli::DashboardFlags& flags);

} // namespace tandem::dashboard
