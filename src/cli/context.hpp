#pragma once
// The command line's names for the app layer it drives: the session (app/session.hpp) and job tracking
// (app/job_tracker.hpp). Commands parse flags, call the app layer and print; they hold no lifecycle.

#include "app/job_tracker.hpp"
#include "app/session.hpp"

namespace tandem::cli {

using Context = app::Session;
using app::find_job;
using app::JobView;
using app::refresh_jobs;
using app::require;
using app::wait_for_job;

} // namespace tandem::cli
