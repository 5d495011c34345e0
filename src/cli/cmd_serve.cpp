// `tandem serve up|status|logs|update|down`: the flags, tables and JSON of services; what they do is
// app/services.hpp over the backends' Services capability (Kubernetes: backends/k8s/serve_manifests.hpp).

#include <map>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/services.hpp"
#include "cli/task_planning.hpp"

namespace tandem::cli {

namespace {

using app::find_service;
using app::placement_on;
using app::ref_of;
using app::service_and_backend;
using app::services_of;
using app::wait_ready;

struct ServeFlags {
    SpecFlags spec;
    std::string name;
    bool json = false;
    bool wait = false;
    int timeout_seconds = 900;
    bool follow = false;
    std::optional<int> tail;
};

// A service name as Kubernetes takes it; `-n` must already be one, a task's name is made one.
Result<std::string> service_name(const ServeFlags& flags, const TaskSpec& spec) {
    if (flags.spec.overrides.name) {
        auto made = service_object_name(*flags.spec.overrides.name);
        if (!made || *made != *flags.spec.overrides.name) {
            return fail(
                ErrorKind::usage,
                fmt::format("'{}' is not a service name: lower-case letters, digits and '-', starting with "
                            "a letter, at most 50 characters",
                            *flags.spec.overrides.name));
        }
        return *made;
    }
    auto made = service_object_name(spec.name);
    if (!made) {
        return fail(ErrorKind::usage, fmt::format("the task's name '{}' gives no service name", spec.name),
                    "name it with -n NAME");
    }
    return *made;
}

Result<TaskSpec> load_service_task(Context& ctx, const SpecFlags& flags) {
    auto spec = load_task(ctx, flags);
    if (!spec) {
        return tl::unexpected(spec.error());
    }
    if (!spec->service) {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("{}: the task has no `service:` section", flags.file),
                    fmt::format("tandem launch {} runs it as a job", flags.file));
    }
    return spec;
}

Result<int> serve_up(Context& ctx, const ServeFlags& flags) {
    auto spec = load_service_task(ctx, flags.spec);
    if (!spec) {
        return tl::unexpected(spec.error());
    }
    auto name = service_name(flags, *spec);
    if (!name) {
        return tl::unexpected(name.error());
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    if (auto existing = (*store)->get_service(*name); !existing) {
        return tl::unexpected(existing.error());
    } else if (*existing) {
        return fail(ErrorKind::usage, fmt::format("service '{}' exists (on {})", *name, (*existing)->cluster),
                    fmt::format("tandem serve update {} FILE rolls it to a new version; tandem serve down {} "
                                "removes it",
                                *name, *name));
    }
    auto placement = placement_on(ctx, *spec, "");
    if (!placement) {
        return tl::unexpected(placement.error());
    }
    auto backend = services_of(ctx, placement->cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    // Recorded first (nothing made on a cluster is ever unknown to tandem), taken back if nothing was made.
    store::ServiceRecord record;
    record.name = *name;
    record.cluster = placement->cluster;
    record.backend = std::string(to_string(placement->kind));
    record.created_at = now_seconds();
    record.updated_at = record.created_at;
    record.spec_json = to_redacted_json(*spec).dump();
    auto inserted = (*store)->insert_service(record);
    if (!inserted) {
        return tl::unexpected(inserted.error());
    }
    if (!*inserted) {
        return fail(ErrorKind::usage, fmt::format("service '{}' was just made by another tandem", *name));
    }
    auto up = (*backend)->serve_up(*spec, *placement, ServiceRef{*name, ""});
    if (!up) {
        (void)(*store)->remove_service(*name);
        return tl::unexpected(up.error());
    }
    record.namespace_name = up->namespace_name;
    if (auto noted = (*store)->set_service_namespace(*name, record.namespace_name); !noted) {
        return tl::unexpected(noted.error());
    }
    for (const auto& n : up->notes) {
        note("tandem: note: " + n);
    }
    note(fmt::format("tandem: service {} is up on {} (namespace {})", *name, record.cluster,
                     record.namespace_name));
    if (flags.wait) {
        auto waited = wait_ready(ctx, *name, 1, flags.timeout_seconds);
        if (!waited) {
            return tl::unexpected(waited.error());
        }
    }
    auto rows = service_rows(ctx, *name, false);
    if (flags.json) {
        print_json(rows && !rows->empty() ? service_json(rows->front()) : nlohmann::json{{"name", *name}});
    } else {
        print_stdout(*name + "\n");
    }
    return exit_code::ok;
}

Result<int> serve_update(Context& ctx, const ServeFlags& flags) {
    auto record = find_service(ctx, flags.name);
    if (!record) {
        return tl::unexpected(record.error());
    }
    auto spec = load_service_task(ctx, flags.spec);
    if (!spec) {
        return tl::unexpected(spec.error());
    }
    auto placement = placement_on(ctx, *spec, record->cluster);
    if (!placement) {
        return tl::unexpected(placement.error());
    }
    auto backend = services_of(ctx, record->cluster);
    if (!backend) {
        return tl::unexpected(backend.error());
    }
    const int version = record->version + 1;
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    auto claimed = (*store)->update_service(record->name, record->version, version,
                                            to_redacted_json(*spec).dump(), now_seconds());
    if (!claimed) {
        return tl::unexpected(claimed.error());
    }
    if (!*claimed) {
        return fail(ErrorKind::usage,
                    fmt::format("service '{}' was changed by another tandem meanwhile", record->name),
                    "run the update again");
    }
    auto updated = (*backend)->serve_update(*spec, *placement, ref_of(*record), version);
    if (!updated) {
        return tl::unexpected(updated.error());
    }
    for (const auto& n : updated->notes) {
        note("tandem: note: " + n);
    }
    note(fmt::format("tandem: service {} rolls to version {} (old replicas stay until new ones are ready)",
                     record->name, version));
    if (flags.wait) {
        auto waited = wait_ready(ctx, record->name, version, flags.timeout_seconds);
        if (!waited) {
            return tl::unexpected(waited.error());
        }
    }
    flags.json ? print_json({{"name", record->name}, {"version", version}})
               : print_stdout(fmt::format("{} version {}\n", record->name, version));
    return exit_code::ok;
}

Result<int> serve_down(Context& ctx, const ServeFlags& flags) {
    auto found = service_and_backend(ctx, flags.name);
    if (!found) {
        return tl::unexpected(found.error());
    }
    const auto& [record, backend] = *found;
    note(fmt::format("tandem: removing service {} from {}", record.name, record.cluster));
    auto removed = backend->serve_down(ref_of(record));
    if (!removed) {
        return tl::unexpected(removed.error()); // the record stays: down can be run again
    }
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    if (auto gone = (*store)->remove_service(record.name); !gone) {
        return tl::unexpected(gone.error());
    }
    if (!*removed) {
        note(fmt::format("tandem: nothing of service {} was left on {}", record.name, record.cluster));
    }
    flags.json ? print_json({{"name", record.name}, {"removed", true}}) : print_stdout(record.name + "\n");
    return exit_code::ok;
}

Result<int> serve_logs(Context& ctx, const ServeFlags& flags) {
    auto found = service_and_backend(ctx, flags.name);
    if (!found) {
        return tl::unexpected(found.error());
    }
    const auto& [record, backend] = *found;
    LogOptions options{flags.follow, flags.tail, std::nullopt};
    auto streamed = backend->serve_logs(ref_of(record), options, [](std::string_view chunk) {
        print_stdout(std::string(chunk));
        return true;
    });
    if (!streamed) {
        return tl::unexpected(streamed.error());
    }
    return exit_code::ok;
}

std::string replica_age(std::int64_t created, std::int64_t now) {
    return created > 0 ? human_duration(now - created) : "-";
}

Result<int> serve_status(Context& ctx, const ServeFlags& flags) {
    if (!flags.name.empty()) {
        if (auto found = find_service(ctx, flags.name); !found) {
            return tl::unexpected(found.error());
        }
    }
    auto rows = service_rows(ctx, flags.name, !flags.name.empty());
    if (!rows) {
        return tl::unexpected(rows.error());
    }
    if (flags.json) {
        if (!flags.name.empty()) {
            print_json(service_json(rows->front()));
        } else {
            auto arr = nlohmann::json::array();
            for (const auto& r : *rows) {
                arr.push_back(service_json(r));
            }
            print_json({{"services", arr}});
        }
        return exit_code::ok;
    }
    if (rows->empty()) {
        note("No services.");
        return exit_code::ok;
    }
    const auto now = now_seconds();
    std::string out = service_table(*rows, now).render();
    if (!flags.name.empty()) {
        const auto& row = rows->front();
        if (!row.view.reason.empty()) {
            out += "Reason: " + row.view.reason + "\n";
        }
        if (row.view.current_qps && row.view.max_replicas) {
            out +=
                fmt::format("Load: {:.3g} requests/s per replica (the autoscaler keeps {}-{} replicas)\n",
                            *row.view.current_qps, row.view.min_replicas.value_or(1), *row.view.max_replicas);
        }
        if (!row.view.replicas.empty()) {
            Table t({"REPLICA", "POD", "VERSION", "STATE", "ADDRESS", "NODE", "RESTARTS", "AGE", "REASON"});
            int k = 0;
            for (const auto& r : row.view.replicas) {
                t.add({std::to_string(++k), r.pod, std::to_string(r.version), coloured_state(r.state),
                       r.address.empty() ? "-" : r.address, r.node.empty() ? "-" : r.node,
                       std::to_string(r.restarts), replica_age(r.created_at, now),
                       r.reason.empty() ? "-" : r.reason});
            }
            out += "\n" + t.render();
        }
    }
    print_stdout(out);
    return exit_code::ok;
}

} // namespace

nlohmann::json service_json(const ServiceRow& row) {
    const auto& v = row.view;
    auto replicas = nlohmann::json::array();
    int k = 0;
    for (const auto& r : v.replicas) {
        replicas.push_back({{"replica", ++k},
                            {"pod", r.pod},
                            {"version", r.version},
                            {"state", r.state},
                            {"reason", r.reason},
                            {"address", r.address},
                            {"node", r.node},
                            {"restarts", r.restarts},
                            {"created_at", r.created_at > 0 ? nlohmann::json(iso_time(r.created_at))
                                                            : nlohmann::json(nullptr)}});
    }
    auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
    nlohmann::json j = {{"name", row.record.name},
                        {"cluster", row.record.cluster},
                        {"namespace", row.record.namespace_name},
                        {"version", v.version > 0 ? v.version : row.record.version},
                        {"status", v.status},
                        {"reason", row.unreachable ? row.unreachable_reason : v.reason},
                        {"unreachable", row.unreachable},
                        {"ready", v.ready},
                        {"desired", v.desired},
                        {"updated", v.updated},
                        {"old_versions", v.old_versions},
                        {"min_replicas", opt(v.min_replicas)},
                        {"max_replicas", opt(v.max_replicas)},
                        {"current_qps", opt(v.current_qps)},
                        {"endpoint", v.endpoint},
                        {"created_at", iso_time(row.record.created_at)}};
    if (!v.replicas.empty()) {
        j["replicas"] = std::move(replicas);
    }
    return j;
}

Table service_table(const std::vector<ServiceRow>& rows, std::int64_t now) {
    Table t({"SERVICE", "CLUSTER", "VERSION", "READY", "REPLICAS", "ENDPOINT", "STATUS", "AGE"});
    for (const auto& r : rows) {
        const auto& v = r.view;
        std::string replicas = v.min_replicas && v.max_replicas
                                   ? fmt::format("{} ({}-{})", v.desired, *v.min_replicas, *v.max_replicas)
                                   : std::to_string(v.desired);
        std::string status = r.unreachable ? "UNKNOWN (" + r.unreachable_reason + ")" : v.status;
        std::string version = std::to_string(v.version > 0 ? v.version : r.record.version);
        for (std::size_t i = 0; i < v.old_versions.size(); ++i) {
            version += (i == 0 ? " (from " : ", ") + std::to_string(v.old_versions[i]) +
                       (i + 1 == v.old_versions.size() ? ")" : "");
        }
        t.add({r.record.name, r.record.cluster, version,
               r.unreachable ? "-" : fmt::format("{}/{}", v.ready, v.desired), r.unreachable ? "-" : replicas,
               v.endpoint.empty() ? "-" : v.endpoint, coloured_state(status),
               human_duration(now - r.record.created_at)});
    }
    return t;
}

void setup_serve(CLI::App& command, Action& action) {
    auto flags = std::make_shared<ServeFlags>();
    command.require_subcommand(1);
    auto* up = command.add_subcommand(
        "up", "Start a task with a `service:` section as a Deployment behind a Service");
    add_spec_flags(*up, flags->spec);
    up->add_flag("--wait", flags->wait, "Wait until every replica is ready (exit 5 on --timeout)");
    up->add_option("--timeout", flags->timeout_seconds, "Seconds --wait waits (default 900)");
    up->add_flag("--json", flags->json, "Print the service as JSON on stdout");
    up->footer("Creates, in the cluster's namespace: a Deployment (replicas of the task, readiness from\n"
               "service.readiness_probe), a Service on the port, a Secret for `secrets:`, and for a\n"
               "replica_policy with target_qps_per_replica an HPA on the per-pod custom metric\n"
               "(serve_qps_metric). The service is named by -n NAME, else by the task's name (made a DNS\n"
               "label). `tandem plan FILE` prints the objects without creating anything.");
    up->callback([flags, &action] { action = [flags](Context& ctx) { return serve_up(ctx, *flags); }; });

    auto* status = command.add_subcommand("status", "Show services: replicas ready/desired, endpoint, age");
    status->add_option("NAME", flags->name, "One service, with a table of its replicas");
    status->add_flag("--json", flags->json, "JSON on stdout: {\"services\": [...]}, or the one service");
    status->callback(
        [flags, &action] { action = [flags](Context& ctx) { return serve_status(ctx, *flags); }; });

    auto* logs =
        command.add_subcommand("logs", "Print or follow the output of every replica ([replica K] prefixes)");
    logs->add_option("NAME", flags->name, "The service")->required();
    logs->add_flag("-f,--follow", flags->follow, "Follow, also replicas started later, until Ctrl-C");
    logs->add_option("--tail", flags->tail, "Only the last N lines of each replica");
    logs->callback([flags, &action] { action = [flags](Context& ctx) { return serve_logs(ctx, *flags); }; });

    auto* update =
        command.add_subcommand("update", "Roll a service to a new task file (never fewer ready replicas)");
    update->add_option("NAME", flags->name, "The service")->required();
    add_spec_flags(*update, flags->spec);
    update->add_flag("--wait", flags->wait, "Wait until every replica runs the new version");
    update->add_option("--timeout", flags->timeout_seconds, "Seconds --wait waits (default 900)");
    update->add_flag("--json", flags->json, "Print {name, version} as JSON");
    update->callback(
        [flags, &action] { action = [flags](Context& ctx) { return serve_update(ctx, *flags); }; });

    auto* down = command.add_subcommand("down", "Remove a service and everything it made");
    down->add_option("NAME", flags->name, "The service")->required();
    down->add_flag("--json", flags->json, "Print {name, removed} as JSON");
    down->callback([flags, &action] { action = [flags](Context& ctx) { return serve_down(ctx, *flags); }; });
}

} // namespace tandem::cli
