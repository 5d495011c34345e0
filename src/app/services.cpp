// Services over the store and the backends' Services capability (see services.hpp).

#include "app/services.hpp"

#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "app/planning.hpp"

namespace tandem::app {

Result<store::ServiceRecord> find_service(Session& ctx, const std::string& name) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    auto found = (*store)->get_service(name);
    if (!found) {
        return tl::unexpected(found.error());
    }
    if (!*found) {
        return fail(ErrorKind::not_found, fmt::format("no service named '{}'", name),
                    "tandem serve status lists the services");
    }
    return **found;
}

Result<Services*> services_of(Session& ctx, const std::string& cluster) {
    auto backend = ctx.backend(cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    return require(**backend, &Capabilities::services, Capability::services);
}

Result<std::pair<store::ServiceRecord, Services*>> service_and_backend(Session& ctx,
                                                                       const std::string& name) {
    auto record = find_service(ctx, name);
    if (!record) {
        return tl::unexpected(record.error());
    }
    auto services = services_of(ctx, record->cluster);
    if (!services) {
        return tl::unexpected(services.error());
    }
    return std::make_pair(std::move(*record), *services);
}

ServiceRef ref_of(const store::ServiceRecord& r) {
    return ServiceRef{r.name, r.namespace_name};
}

Status wait_ready(Session& ctx, const std::string& name, int version, int timeout_seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    std::string last;
    for (;;) {
        auto rows = service_rows(ctx, name, false);
        if (!rows) {
            return tl::unexpected(rows.error());
        }
        if (rows->empty()) {
            return fail(ErrorKind::not_found, fmt::format("service '{}' is gone", name));
        }
        const auto& v = rows->front().view;
        const std::string line = fmt::format("service {}: {} ({}/{} ready){}", name, v.status, v.ready,
                                             v.desired, v.reason.empty() ? "" : ": " + v.reason);
        if (line != last && !rows->front().unreachable) {
            ctx.progress(line);
            last = line;
        }
        if (v.status == "READY" && v.version == version) {
            return {};
        }
        if (std::chrono::steady_clock::now() > deadline) {
            return fail(ErrorKind::timeout,
                        fmt::format("service {} was not ready after {} s: {}{}", name, timeout_seconds,
                                    v.status, v.reason.empty() ? "" : " (" + v.reason + ")"),
                        fmt::format("tandem serve status {} shows each replica", name));
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}

Result<Placement> placement_on(Session& ctx, TaskSpec spec, const std::string& cluster) {
    auto planned = plan_loaded_task(ctx, std::move(spec), std::chrono::seconds(30));
    if (!planned) {
        return tl::unexpected(planned.error());
    }
    for (const auto& p : planned->plan.placements) {
        if (cluster.empty() || p.cluster == cluster) {
            return p;
        }
    }
    for (const auto& r : planned->plan.rejections) {
        if (r.cluster == cluster) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("the task cannot run on {}: {}", cluster, rejection_line(r)));
        }
    }
    if (cluster.empty()) {
        return tl::unexpected(no_placement_error(*planned));
    }
    return fail(ErrorKind::invalid_spec,
                fmt::format("the task cannot run on {}, where the service runs", cluster));
}

Result<std::vector<ServiceRow>> service_rows(Session& ctx, const std::string& name, bool replicas) {
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    std::vector<store::ServiceRecord> records;
    if (!name.empty()) {
        auto one = (*store)->get_service(name);
        if (!one) {
            return tl::unexpected(one.error());
        }
        if (*one) {
            records.push_back(**one);
        }
    } else {
        auto all = (*store)->list_services();
        if (!all) {
            return tl::unexpected(all.error());
        }
        records = std::move(*all);
    }
    std::vector<ServiceRow> rows(records.size());
    std::map<std::string, std::vector<std::size_t>> by_cluster;
    for (std::size_t i = 0; i < records.size(); ++i) {
        rows[i].record = records[i];
        rows[i].view.name = records[i].name;
        by_cluster[records[i].cluster].push_back(i);
    }
    for (const auto& [cluster, indexes] : by_cluster) {
        auto mark = [&](const Error& e) {
            for (auto i : indexes) {
                rows[i].unreachable = true;
                rows[i].unreachable_reason = e.message;
                rows[i].view.status = "UNKNOWN";
            }
        };
        auto backend = services_of(ctx, cluster);
        if (!backend) {
            mark(backend.error());
            continue;
        }
        std::vector<ServiceRef> refs;
        for (auto i : indexes) {
            refs.push_back(ref_of(rows[i].record));
        }
        auto views = (*backend)->serve_status(refs, replicas);
        if (!views) {
            mark(views.error());
            continue;
        }
        for (std::size_t k = 0; k < indexes.size() && k < views->size(); ++k) {
            rows[indexes[k]].view = std::move((*views)[k]);
        }
    }
    return rows;
}

} // namespace tandem::app
