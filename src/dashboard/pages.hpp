#pragma once
// The dashboard's pages as server-rendered HTML: they work without JavaScript (a little of it polls the
// job list and follows a log), use no asset from outside (the stylesheet and script are served by
// tandem), and escape every byte that came from a task, a cluster or a log.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.hpp"
#include "dashboard/board.hpp"
#include "store/job_store.hpp"

namespace tandem::dashboard {

// &, <, >, " and ' as entities; control characters other than newline and tab dropped, and terminal
// escape sequences (colour) removed, so a log cannot draw over the page.
std::string escape(std::string_view text);

// The list's filters, from the query string: state ("", "active" or a state name), cluster, name part.
struct ListQuery {
    std::string state;
    std::string cluster;
    std::string name;
};
bool matches(const app::JobView& view, const ListQuery& query);

struct PageContext {
    std::int64_t now = 0;
    std::string csrf;          // the form field a cancel must carry
    bool allow_cancel = false;
    int refresh_seconds = 5;
};

// "/": the filter form, a count per state, the job table (groups with their members below them), the
// services, and what the last refresh could not do.
std::string render_list(const Board& board, const ListQuery& query, const PageContext& page);
// The job table's body alone, for the page's poll.
std::string render_rows(const Board& board, const ListQuery& query, const PageContext& page);

// "/jobs/ID": what the job page needs besides the board.
struct JobPage {
    app::JobView view;
    std::vector<store::Attempt> attempts;              // failover history
    std::optional<app::GroupView> group;               // when the job is a group
    std::optional<JobRecord> parent;                   // when the job is a member
    std::map<std::string, std::vector<std::string>> hosts; // a group's published addresses, per member
    std::optional<int> node;                           // the rank whose log is shown
    std::string log;                                   // its last lines
    std::string log_error;                             // why there is none
};
std::string render_job(const JobPage& job, const PageContext& page);

// "/infra": each cluster's pools with GPUs free/total drawn as bars.
std::string render_infra(const Inventory& inventory, const PageContext& page);

// A page with one message (404, 401...).
std::string render_message(std::string_view title, std::string_view text);

extern const std::string_view k_stylesheet;
extern const std::string_view k_script;

} // namespace tandem::dashboard
