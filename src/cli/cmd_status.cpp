// `tandem status [JOB...]`: refresh every listed non-terminal job (one backend call per cluster) and
// print one table, or JSON; with -w, then one line (or JSON line) per change until the jobs have ended. A
// cluster that cannot be reached leaves its jobs UNKNOWN, showing the last known state and its age; everyone
// else's jobs are still shown.

#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/discovery.hpp"
#include "cli/commands.hpp"
#include "cli/groups.hpp"
#include "cli/output.hpp"
#include "cli/services.hpp"
#include "cli/status_watch.hpp"
#include "core/job_recovery.hpp"
#include "core/sweep.hpp"

namespace tandem::cli {

namespace {

constexpr std::int64_t k_recent_seconds = 24 * 3600;

struct StatusFlags {
    std::vector<std::string> jobs;
    bool all = false;
    bool json = false;
    bool exit_code = false;
    bool no_refresh = false;
    bool watch = false;
    bool all_users = false;
    std::optional<std::string> cluster, name, state;
};

std::string state_cell(const JobView& v, std::int64_t now) {
    if (v.unreachable) {
        return coloured_state(fmt::format("UNKNOWN (was {} {} ago)", to_string(v.record.state),
                                          human_duration(now - v.record.updated_at)));
    }
    return coloured_state(to_string(v.record.state));
}

std::string duration_cell(const JobRecord& r, std::int64_t now) {
    if (!r.started_at) {
        return "-";
    }
    return human_duration(r.ended_at.value_or(now) - *r.started_at);
}

// "exit code 0, after 1 recovery (exit code 3)": the job's reason, and how it recovered on its way there.
std::string with_recoveries(const std::string& reason, const std::string& recoveries) {
    const std::string summary = recoveries_summary(recoveries);
    if (summary.empty()) {
        return reason;
    }
    return reason.empty() ? "after " + summary : reason + ", after " + summary;
}

std::vector<std::string> row_of(const JobView& v, std::int64_t now) {
    const auto& r = v.record;
    return {std::to_string(r.id),
            r.is_group() ? r.name + " (group)" : r.name,
            r.cluster,
            state_cell(v, now),
            v.unreachable ? v.unreachable_reason : with_recoveries(r.reason, r.recoveries),
            r.gpus.empty() ? "-" : (r.num_nodes > 1 ? fmt::format("{}x{}", r.num_nodes, r.gpus) : r.gpus),
            human_duration(now - r.submitted_at),
            duration_cell(r, now)};
}

nlohmann::json attempt_json(const store::Attempt& a) {
    return {{"attempt", a.number},
            {"cluster", a.cluster},
            {"backend", a.backend},
            {"pool", a.pool},
            {"remote_id", a.remote_id},
            {"submitted_at", iso_time(a.submitted_at)},
            {"ended_at", iso_time(a.ended_at)},
            {"outcome", a.outcome}};
}

// The placements a job left (failover), for jobs named on the command line; empty for the others.
std::map<std::int64_t, std::vector<store::Attempt>> histories(store::JobStore& store,
                                                              const std::vector<JobView>& views) {
    std::map<std::int64_t, std::vector<store::Attempt>> out;
    for (const auto& v : views) {
        if (auto a = store.attempts(v.record.id); a && !a->empty()) {
            out[v.record.id] = std::move(*a);
        }
    }
    return out;
}

std::string history_text(const std::map<std::int64_t, std::vector<store::Attempt>>& all) {
    std::string out;
    for (const auto& [id, attempts] : all) {
        out += fmt::format("\nJob {} moved {} time(s):\n", id, attempts.size());
        Table t({"ATTEMPT", "CLUSTER", "POOL", "REMOTE ID", "SUBMITTED", "OUTCOME"});
        for (const auto& a : attempts) {
            t.add({std::to_string(a.number), a.cluster, a.pool.empty() ? "-" : a.pool,
                   a.remote_id.empty() ? "-" : a.remote_id, iso_time(a.submitted_at), a.outcome});
        }
        out += t.render();
    }
    return out;
}

// What --watch follows: a group through its members (the group's own row changes only when someone
// advances it).
std::vector<JobView> watched_jobs(const std::vector<JobView>& views,
                                  const std::map<std::int64_t, const GroupView*>& groups) {
    std::vector<JobView> out;
    for (const auto& v : views) {
        if (auto g = groups.find(v.record.id); g != groups.end()) {
            out.insert(out.end(), g->second->members.begin(), g->second->members.end());
        } else {
            out.push_back(v);
        }
    }
    return out;
}

Result<int> status(Context& ctx, const StatusFlags& flags) {
    store::JobFilter filter;
    for (const auto& text : flags.jobs) {
        auto job = find_job(ctx, text);
        if (!job) {
            return tl::unexpected(job.error());
        }
        filter.ids.push_back(job->id);
    }
    if (flags.exit_code && flags.jobs.size() != 1) {
        return fail(ErrorKind::usage, "--exit-code needs exactly one JOB");
    }
    if (flags.watch && (flags.exit_code || flags.no_refresh)) {
        return fail(ErrorKind::usage, "--watch cannot be combined with --exit-code or --no-refresh");
    }
    if (flags.state) {
        filter.state = job_state_from_string(*flags.state);
        if (!filter.state) {
            return fail(ErrorKind::usage, fmt::format("--state '{}' is not a state", *flags.state),
                        "use PENDING, STARTING, RUNNING, SUCCEEDED, FAILED or CANCELLED");
        }
    }
    filter.cluster = flags.cluster;
    filter.name = flags.name;
    const auto now = now_seconds();
    if (!flags.all && filter.ids.empty()) {
        filter.ended_after = now - k_recent_seconds;
    }
    // A group's row stands for its members, which are listed below it (a member named by id is shown
    // on its own). Filters apply to the rows listed.
    filter.top_level_only = filter.ids.empty() && !flags.cluster && !flags.name;
    auto store = ctx.store();
    if (!store) {
        return tl::unexpected(store.error());
    }
    // The clusters are the record: what they hold for the caller and this store lacks is adopted first
    // (one list call per cluster). Jobs named by id are this store's already.
    app::DiscoveryReport found;
    if (filter.ids.empty() && !flags.no_refresh) {
        found = app::discover_jobs(ctx, flags.all_users, flags.cluster);
        for (const auto& p : found.problems) {
            note(p);
        }
    } else if (flags.all_users) {
        return fail(ErrorKind::usage, "--all-users lists what the clusters hold: it takes no JOB and no --no-refresh");
    }
    auto jobs = (*store)->list(filter);
    if (!jobs) {
        return tl::unexpected(jobs.error());
    }
    // Plain jobs and groups, back in the listed order; a group's members follow it.
    auto refreshed = refresh_with_groups(ctx, std::move(*jobs), !flags.no_refresh);
    std::vector<JobView> views;
    std::map<std::int64_t, const GroupView*> groups;
    if (refreshed.groups.empty()) {
        views = std::move(refreshed.plain);
    } else {
        views.reserve(refreshed.is_group.size());
        std::size_t p = 0, g = 0;
        for (bool is_group : refreshed.is_group) {
            if (is_group) {
                groups[refreshed.groups[g].group.record.id] = &refreshed.groups[g];
                views.push_back(refreshed.groups[g++].group);
            } else {
                views.push_back(std::move(refreshed.plain[p++]));
            }
        }
    }
    const auto history = filter.ids.empty() ? std::map<std::int64_t, std::vector<store::Attempt>>{}
                                            : histories(**store, views);
    auto with_history = [&](const JobView& v) {
        if (auto g = groups.find(v.record.id); g != groups.end()) {
            return group_json(*g->second);
        }
        nlohmann::json j = job_json(v.record, v.unreachable, v.unreachable_reason);
        if (auto it = history.find(v.record.id); it != history.end()) {
            auto arr = nlohmann::json::array();
            for (const auto& a : it->second) {
                arr.push_back(attempt_json(a));
            }
            j["attempts"] = std::move(arr);
        } else if (!filter.ids.empty()) {
            j["attempts"] = nlohmann::json::array(); // listed by id: the member is always there
        }
        return j;
    };
    if (flags.exit_code) {
        if (flags.json) {
            print_json(with_history(views.front()));
        }
        return job_exit_code(views.front()); // a group's row holds its outcome (the primaries')
    }
    // Services stand beside the jobs when the listing is not narrowed to some jobs.
    std::vector<ServiceRow> services;
    if (filter.ids.empty() && !flags.cluster && !flags.name && !flags.state && !flags.no_refresh) {
        auto rows = service_rows(ctx, "", false);
        if (!rows) {
            return tl::unexpected(rows.error());
        }
        services = std::move(*rows);
    }
    if (flags.json) {
        auto arr = nlohmann::json::array();
        for (const auto& v : views) {
            arr.push_back(with_history(v));
        }
        nlohmann::json out;
        out["jobs"] = std::move(arr); // an initializer list would copy 10,000 objects
        if (flags.all_users) {
            auto others = nlohmann::json::array();
            for (const auto& o : found.others) {
                nlohmann::json j = job_json(o.record, false, "");
                j.erase("id");
                j["user"] = o.owner;
                others.push_back(std::move(j));
            }
            out["other_users"] = std::move(others);
        }
        if (!services.empty()) {
            auto list = nlohmann::json::array();
            for (const auto& r : services) {
                list.push_back(service_json(r));
            }
            out["services"] = std::move(list);
        }
        if (!flags.watch) {
            print_json(out);
            return exit_code::ok;
        }
        print_stdout(out.dump() + "\n"); // --watch --json: one JSON document per line
        auto watched = watch_jobs(ctx, watched_jobs(views, groups), [](const JobView& v) {
            print_stdout(
                nlohmann::json{{"job", job_json(v.record, v.unreachable, v.unreachable_reason)}}.dump() +
                "\n");
        });
        return watched ? Result<int>(exit_code::ok) : tl::unexpected(watched.error());
    }
    const std::string services_text = services.empty() ? "" : service_table(services, now).render();
    if (views.empty() && found.others.empty()) {
        note(flags.all ? "No jobs." : "No active or recent jobs (see --all).");
        if (!services_text.empty()) {
            print_stdout(services_text);
        }
        return exit_code::ok;
    }
    // --all-users: a USER column (the cluster's word for whose job it is), then other users' jobs.
    std::vector<std::string> header{"ID", "NAME", "CLUSTER", "STATE", "REASON", "GPUS", "AGE", "DURATION"};
    if (flags.all_users) {
        header.insert(header.begin() + 1, "USER");
    }
    Table table(header);
    auto user_of = [&](const JobRecord& r) {
        auto it = found.owners.find(app::owner_key(r.cluster, r.remote_id));
        if (it != found.owners.end()) {
            return it->second.empty() ? std::string("-") : it->second;
        }
        auto me = found.me.find(r.cluster);
        return me != found.me.end() && !me->second.empty() ? me->second : std::string("-");
    };
    auto add = [&](std::vector<std::string> row, const JobRecord& r) {
        if (flags.all_users) {
            row.insert(row.begin() + 1, r.is_group() || (r.id == 0 && r.cluster.empty()) ? "-" : user_of(r));
        }
        table.add(std::move(row));
    };
    for (const auto& v : views) {
        add(row_of(v, now), v.record);
        // A sweep named on the command line: its elements below it, with their values.
        if (const auto sweep = flags.jobs.empty() ? std::nullopt : sweep_of(v.record)) {
            const auto states = parse_element_states(v.record.elements).value_or(std::vector<ElementState>{});
            for (std::size_t i = 0; i < sweep->size(); ++i) {
                const ElementState e =
                    i < states.size() ? states[i] : ElementState{v.record.state, std::nullopt};
                const auto label = sweep_element_label(*sweep, i);
                add({"", label.rfind('#', 0) == 0 ? "  " + label : fmt::format("  #{} {}", i, label),
                     v.record.cluster, std::string(to_string(e.state)),
                     e.exit_code ? fmt::format("exit code {}", *e.exit_code) : std::string("-"), "", "", ""},
                    JobRecord{});
            }
        }
        if (auto g = groups.find(v.record.id); g != groups.end()) {
            const auto hosts = published_hosts(g->second->group.record);
            for (const auto& m : g->second->members) {
                auto row = row_of(m, now);
                row[1] = "  " + m.record.member; // indented below its group
                add(std::move(row), m.record);
                // A multi-node member's ranks, once their addresses are known.
                auto h = hosts.find(m.record.member);
                if (m.record.num_nodes > 1 && h != hosts.end()) {
                    for (std::size_t rank = 0; rank < h->second.size(); ++rank) {
                        add({"", fmt::format("    rank {}", rank), m.record.cluster, "", "on " + h->second[rank],
                             "", "", ""},
                            JobRecord{});
                    }
                }
            }
        }
    }
    for (const auto& o : found.others) {
        auto row = row_of(JobView{o.record, false, {}}, now);
        row[0] = "-"; // another user's: not in this store
        if (flags.all_users) {
            row.insert(row.begin() + 1, o.owner.empty() ? "-" : o.owner);
        }
        table.add(std::move(row));
    }
    print_stdout(table.render() + history_text(history) + (services_text.empty() ? "" : "\n" + services_text));
    if (!flags.watch) {
        return exit_code::ok;
    }
    auto watched = watch_jobs(ctx, watched_jobs(views, groups), [&, widths = table.widths()](const JobView& v) {
        auto row = row_of(v, now_seconds());
        if (flags.all_users) {
            row.insert(row.begin() + 1, user_of(v.record));
        }
        print_stdout(Table::render_row(row, widths));
    });
    return watched ? Result<int>(exit_code::ok) : tl::unexpected(watched.error());
}

} // namespace

void setup_status(CLI::App& command, Action& action) {
    auto flags = std::make_shared<StatusFlags>();
    command.add_option("JOB", flags->jobs, "Job ids (default: active jobs and those ended in the last 24h)");
    command.add_flag("-a,--all", flags->all, "Every job ever recorded");
    command.add_flag("--json", flags->json,
                     "JSON on stdout: {\"jobs\": [...]} and, when there are any, \"services\": [...] (see README)");
    command.add_flag(
        "--exit-code", flags->exit_code,
        "Exit with the job's outcome as a code (0 succeeded, its own code if it failed, 101 not finished)");
    command.add_flag("--no-refresh", flags->no_refresh, "Show what is stored; do not ask the backends");
    command.add_flag("-w,--watch", flags->watch,
                     "After the table, print a line per change until every listed job has ended "
                     "(Kubernetes: the watch API; other backends: a refresh every 2 s)");
    command.add_flag("--all-users", flags->all_users,
                     "Every user's tandem jobs on the clusters, with a USER column (the cluster's user); "
                     "other users' jobs are shown, never adopted");
    command.add_option("--cluster", flags->cluster, "Only jobs on this cluster");
    command.add_option("--name", flags->name, "Only jobs with this name");
    command.add_option("--state", flags->state, "Only jobs in this state (PENDING, RUNNING, FAILED...)");
    command.footer("A pipeline or job group is one row, NAME (group), with its members indented below it (and a\n"
                   "multi-node member's ranks with their addresses, once published); --json nests them as\n"
                   "\"members\". Looking at a group also moves it on: publishes its members' addresses once all\n"
                   "have started, and stops the other members when its primary tasks have ended.\n"
                   "The clusters are the record: status first asks every cluster in config.yaml (one list\n"
                   "call each) for the jobs tandem made there, and adopts yours that this machine did not\n"
                   "launch (a teammate's CI runner, a lost job store) with an id of their own.");
    command.callback([flags, &action] { action = [flags](Context& ctx) { return status(ctx, *flags); }; });
}

} // namespace tandem::cli
