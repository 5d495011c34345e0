#include "cli/status_watch.hpp"

#include <map>
#include <mutex>
#include <thread>

#include "backends/polling.hpp"
#include "cli/output.hpp"

namespace tandem::cli {

namespace {

bool differs(const JobRecord& r, const JobUpdate& u) {
    return r.state != u.state || r.reason != u.reason || r.exit_code != u.exit_code;
}

} // namespace

Status watch_jobs(Context& ctx, std::vector<JobView> views, const ChangePrinter& print) {
    std::map<std::string, std::vector<std::size_t>> by_cluster;
    for (std::size_t i = 0; i < views.size(); ++i) {
        const auto& r = views[i].record;
        if (!is_terminal(r.state) && !r.remote_id.empty()) {
            by_cluster[r.cluster].push_back(i);
        }
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    // Backends are made here, on this thread; each then runs on its own.
    std::vector<std::pair<Backend*, std::vector<std::size_t>>> work;
    for (const auto& [cluster, indexes] : by_cluster) {
        auto backend = ctx.backend(cluster);
        if (!backend) {
            return tl::unexpected(backend.error());
        }
        work.emplace_back(*backend, indexes);
    }
    std::mutex mutex;
    std::vector<Status> results(work.size());
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < work.size(); ++w) {
        threads.emplace_back([&, w] {
            auto& [backend, indexes] = work[w];
            std::vector<JobRecord> batch;
            for (auto i : indexes) {
                batch.push_back(views[i].record);
            }
            results[w] = backends::watch_jobs(*backend, batch, [&](const std::vector<JobUpdate>& updates) {
                std::lock_guard lock(mutex);
                const auto now = now_seconds();
                bool all_ended = true;
                for (std::size_t k = 0; k < indexes.size() && k < updates.size(); ++k) {
                    JobView& view = views[indexes[k]];
                    const JobUpdate& u = updates[k];
                    if (is_terminal(view.record.state)) {
                        continue;
                    }
                    if (u.state == JobState::unknown || !differs(view.record, u)) {
                        all_ended = false;
                        continue;
                    }
                    auto applied = (*store)->update_many({{view.record.id, u}}, now, {view.record.remote_id});
                    auto fresh = (*store)->get(view.record.id);
                    if (applied && fresh && *fresh) {
                        view.record = **fresh; // what the store kept (a cancel may have won)
                    } else {
                        view.record.state = u.state;
                        view.record.reason = u.reason;
                        view.record.exit_code = u.exit_code;
                    }
                    view.unreachable = false;
                    print(view);
                    all_ended = all_ended && is_terminal(view.record.state);
                }
                return !all_ended;
            });
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (std::size_t w = 0; w < results.size(); ++w) {
        if (!results[w]) {
            for (auto i : work[w].second) {
                if (!is_terminal(views[i].record.state)) {
                    views[i].unreachable = true;
                    views[i].unreachable_reason = results[w].error().message;
                    print(views[i]);
                }
            }
            return results[w];
        }
    }
    return {};
}

} // namespace tandem::cli
