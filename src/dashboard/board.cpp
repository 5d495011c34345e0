#include "dashboard/board.hpp"

#include <algorithm>

#include "app/discovery.hpp"

namespace tandem::dashboard {

Board take_board(app::Session& session) {
    Board board;
    for (const auto& c : session.config().clusters) {
        board.clusters.push_back(c.name);
    }
    auto found = app::discover_jobs(session, false);
    board.problems = std::move(found.problems);
    auto store = session.store();
    if (!store) {
        board.problems.push_back(store.error().message);
        board.taken_at = session.now();
        return board;
    }
    store::JobFilter filter;
    filter.top_level_only = true;
    auto jobs = (*store)->list(filter);
    if (!jobs) {
        board.problems.push_back(jobs.error().message);
        board.taken_at = session.now();
        return board;
    }
    auto refreshed = app::refresh_with_groups(session, std::move(*jobs), true);
    board.jobs.reserve(refreshed.is_group.size());
    std::size_t p = 0, g = 0;
    for (bool is_group : refreshed.is_group) {
        if (is_group) {
            auto& view = refreshed.groups[g++];
            board.jobs.push_back(view.group);
            const auto id = view.group.record.id;
            board.groups.emplace(id, std::move(view));
        } else {
            board.jobs.push_back(std::move(refreshed.plain[p++]));
        }
    }
    std::sort(board.jobs.begin(), board.jobs.end(),
              [](const app::JobView& a, const app::JobView& b) { return a.record.id > b.record.id; });
    if (auto services = app::service_rows(session, "", false)) {
        board.services = std::move(*services);
    } else {
        board.problems.push_back("services: " + services.error().message);
    }
    board.taken_at = session.now();
    return board;
}

const app::JobView* find_on_board(const Board& board, std::int64_t id) {
    for (const auto& v : board.jobs) {
        if (v.record.id == id) {
            return &v;
        }
    }
    for (const auto& [gid, group] : board.groups) {
        for (const auto& m : group.members) {
            if (m.record.id == id) {
                return &m;
            }
        }
    }
    return nullptr;
}

} // namespace tandem::dashboard
