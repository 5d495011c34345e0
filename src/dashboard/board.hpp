#pragma once
// What every open page of `tandem dashboard` shows, taken by one refresh shared by all of them: the same
// calls `tandem status` makes (discovery, the store's list, one refresh per cluster with the groups
// advanced, the services), kept whole so a page renders from memory without asking a cluster.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/group_runner.hpp"
#include "app/job_tracker.hpp"
#include "app/services.hpp"

namespace tandem::dashboard {

struct Board {
    std::int64_t taken_at = 0;                     // unix seconds; 0: not taken yet
    std::vector<app::JobView> jobs;                // top-level rows (plain jobs and groups), newest first
    std::map<std::int64_t, app::GroupView> groups; // by the group's id
    std::vector<app::ServiceRow> services;
    std::vector<std::string> problems;             // what discovery or the services could not do
    std::vector<std::string> clusters;             // configured, for the filter
};

// One refresh, as `status --all` makes it (discovery first: jobs launched elsewhere are adopted).
Board take_board(app::Session& session);

// The job `id` among the board's rows and its groups' members; nullptr when the board does not hold it.
const app::JobView* find_on_board(const Board& board, std::int64_t id);

} // namespace tandem::dashboard
