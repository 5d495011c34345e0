// tandem-dashboard: `tandem dashboard` hands over here (cli/dashboard.hpp). The same command line, the
// same command table; only the dashboard's runner is set.

#include "cli/app.hpp"
#include "cli/dashboard.hpp"
#include "dashboard/server.hpp"

int main(int argc, char** argv) {
    tandem::cli::set_dashboard_runner(&tandem::dashboard::serve);
    return tandem::cli::run(argc, argv);
}
