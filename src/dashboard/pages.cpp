#include "dashboard/pages.hpp"

#include <algorithm>
#include <array>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/job_recovery.hpp"
#include "core/quantity.hpp"
#include "core/sweep.hpp"

namespace tandem::dashboard {

namespace {

constexpr std::array<JobState, 7> k_states{JobState::pending,   JobState::starting, JobState::running,
                                           JobState::succeeded, JobState::failed,   JobState::cancelled,
                                           JobState::unknown};

std::string iso(std::int64_t t) {
    if (t <= 0) {
        return "-";
    }
    return fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", fmt::gmtime(static_cast<std::time_t>(t)));
}

std::string state_class(std::string_view state) {
    std::string out = "st st-";
    for (char c : state) {
        out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    return out;
}

std::string state_badge(const app::JobView& v) {
    const std::string_view state = to_string(v.record.state);
    if (v.unreachable) {
        return fmt::format("<span class=\"st st-unknown\" title=\"cluster unreachable; last known {}\">UNKNOWN "
                           "(was {})</span>",
                           state, state);
    }
    return fmt::format("<span class=\"{}\">{}</span>", state_class(state), state);
}

std::string duration_of(const JobRecord& r, std::int64_t now) {
    return r.started_at ? human_duration(r.ended_at.value_or(now) - *r.started_at) : "-";
}

std::string gpus_of(const JobRecord& r) {
    if (r.gpus.empty()) {
        return "-";
    }
    return r.num_nodes > 1 ? fmt::format("{}x{}", r.num_nodes, r.gpus) : r.gpus;
}

std::string page(std::string_view title, std::string_view nav, const std::string& body,
                 std::string_view body_attrs = "") {
    std::string out;
    out.reserve(body.size() + 1024);
    out += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           "<meta name=\"color-scheme\" content=\"light dark\">"
           "<meta name=\"referrer\" content=\"same-origin\"><title>";
    out += escape(title);
    out += " · tandem</title><link rel=\"stylesheet\" href=\"/static/tandem.css\">"
           "<script src=\"/static/tandem.js\" defer></script></head><body";
    out += body_attrs;
    out += "><header><a class=\"brand\" href=\"/\">tandem</a><nav>";
    out += fmt::format("<a href=\"/\"{}>Jobs</a><a href=\"/infra\"{}>Infra</a>",
                       nav == "jobs" ? " aria-current=\"page\"" : "", nav == "infra" ? " aria-current=\"page\"" : "");
    out += "</nav></header><main>";
    out += body;
    out += "</main></body></html>\n";
    return out;
}

void job_row(std::string& out, const app::JobView& v, const PageContext& ctx, std::string_view name_cell,
             std::string_view row_class) {
    const auto& r = v.record;
    out += fmt::format("<tr class=\"{}\"><td class=\"num\"><a href=\"/jobs/{}\">{}</a></td>", row_class, r.id, r.id);
    out += fmt::format("<td><a href=\"/jobs/{}\">{}</a></td>", r.id, name_cell);
    out += "<td>" + escape(r.cluster.empty() ? std::string("-") : r.cluster) + "</td>";
    out += "<td>" + state_badge(v) + "</td>";
    out += "<td class=\"reason\">" + escape(v.unreachable ? v.unreachable_reason : r.reason) + "</td>";
    out += "<td>" + escape(gpus_of(r)) + "</td>";
    out += "<td class=\"num\">" + human_duration(ctx.now - r.submitted_at) + "</td>";
    out += "<td class=\"num\">" + duration_of(r, ctx.now) + "</td></tr>\n";
}

bool query_matches_group(const app::GroupView& g, const ListQuery& q) {
    if (matches(g.group, q)) {
        return true;
    }
    return std::any_of(g.members.begin(), g.members.end(), [&](const app::JobView& m) { return matches(m, q); });
}

std::string selected(bool on) {
    return on ? " selected" : "";
}

std::string facts_row(std::string_view key, const std::string& value_html) {
    return fmt::format("<tr><th scope=\"row\">{}</th><td>{}</td></tr>\n", key, value_html);
}

std::string pretty_json(const std::string& text) {
    if (text.empty()) {
        return "-";
    }
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? text : j.dump(2);
}

std::string cancel_form(std::int64_t id, bool group, const PageContext& ctx) {
    return fmt::format("<details class=\"cancel\"><summary>Cancel…</summary><form method=\"post\" "
                       "action=\"/jobs/{}/cancel\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">"
                       "<p>{}</p><button type=\"submit\" id=\"cancel-{}\">Cancel job {}</button></form></details>",
                       id, escape(ctx.csrf),
                       group ? "Cancels every member on every cluster." : "Cancels the job on its cluster.", id,
                       id);
}

} // namespace

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        case '\x1b':
            // CSI sequences (colour, cursor moves): ESC [ parameters final-byte.
            if (i + 1 < text.size() && text[i + 1] == '[') {
                i += 2;
                while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) {
                    ++i;
                }
            }
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
                break; // \r, backspace, bell...: nothing a page should draw
            }
            if (c == 0x7f) {
                break;
            }
            out += c;
        }
    }
    return out;
}

bool matches(const app::JobView& v, const ListQuery& q) {
    const auto& r = v.record;
    if (!q.state.empty()) {
        if (q.state == "active") {
            if (is_terminal(r.state)) {
                return false;
            }
        } else if (q.state == "UNKNOWN") {
            if (!v.unreachable && r.state != JobState::unknown) {
                return false;
            }
        } else if (to_string(r.state) != q.state) {
            return false;
        }
    }
    if (!q.cluster.empty() && r.cluster != q.cluster && !r.is_group()) {
        return false;
    }
    if (!q.name.empty() && r.name.find(q.name) == std::string::npos && r.member.find(q.name) == std::string::npos) {
        return false;
    }
    return true;
}

std::string render_rows(const Board& board, const ListQuery& query, const PageContext& ctx) {
    std::string out;
    out.reserve(board.jobs.size() * 420);
    std::size_t shown = 0;
    for (const auto& v : board.jobs) {
        auto g = v.record.is_group() ? board.groups.find(v.record.id) : board.groups.end();
        if (g != board.groups.end()) {
            if (!query_matches_group(g->second, query)) {
                continue;
            }
            job_row(out, v, ctx, escape(v.record.name) + " <span class=\"tag\">group</span>", "group");
            ++shown;
            for (const auto& m : g->second.members) {
                job_row(out, m, ctx, "<span class=\"indent\">" + escape(m.record.member) + "</span>", "member");
            }
            continue;
        }
        if (!matches(v, query)) {
            continue;
        }
        job_row(out, v, ctx, escape(v.record.name), "job");
        ++shown;
    }
    if (shown == 0) {
        out += board.taken_at == 0 ? "<tr><td colspan=\"8\" class=\"empty\">Asking the clusters…</td></tr>\n"
                                   : "<tr><td colspan=\"8\" class=\"empty\">No jobs match.</td></tr>\n";
    }
    return out;
}

std::string render_list(const Board& board, const ListQuery& query, const PageContext& ctx) {
    std::string body;
    // Counts per state, over every top-level row.
    std::map<std::string, int> counts;
    for (const auto& v : board.jobs) {
        ++counts[std::string(v.unreachable ? "UNKNOWN" : to_string(v.record.state))];
    }
    body += "<section class=\"summary\"><h1>Jobs</h1><p class=\"counts\">";
    body += fmt::format("{} job{}", board.jobs.size(), board.jobs.size() == 1 ? "" : "s");
    for (auto s : k_states) {
        if (auto it = counts.find(std::string(to_string(s))); it != counts.end()) {
            body += fmt::format(" · <span class=\"{}\">{} {}</span>", state_class(to_string(s)), it->second,
                                to_string(s));
        }
    }
    body += fmt::format("</p><p class=\"taken\" id=\"taken\">{}</p></section>\n",
                        board.taken_at == 0 ? std::string("asking the clusters…")
                                            : "as of " + iso(board.taken_at));
    // The filter: a plain GET form.
    body += "<form class=\"filter\" method=\"get\" action=\"/\"><label>State <select name=\"state\">";
    body += fmt::format("<option value=\"\"{}>any</option><option value=\"active\"{}>active</option>",
                        selected(query.state.empty()), selected(query.state == "active"));
    for (auto s : k_states) {
        body += fmt::format("<option{}>{}</option>", selected(query.state == to_string(s)), to_string(s));
    }
    body += "</select></label><label>Cluster <select name=\"cluster\"><option value=\"\">any</option>";
    std::vector<std::string> clusters = board.clusters;
    for (const auto& v : board.jobs) {
        if (!v.record.is_group() &&
            std::find(clusters.begin(), clusters.end(), v.record.cluster) == clusters.end()) {
            clusters.push_back(v.record.cluster);
        }
    }
    for (const auto& c : clusters) {
        body += fmt::format("<option{}>{}</option>", selected(query.cluster == c), escape(c));
    }
    body += fmt::format("</select></label><label>Name <input name=\"name\" value=\"{}\" size=\"16\"></label>"
                        "<button type=\"submit\">Filter</button></form>\n",
                        escape(query.name));
    body += "<table class=\"jobs\"><thead><tr><th>ID</th><th>NAME</th><th>CLUSTER</th><th>STATE</th><th>REASON</th>"
            "<th>GPUS</th><th>AGE</th><th>DURATION</th></tr></thead><tbody id=\"rows\">\n";
    body += render_rows(board, query, ctx);
    body += "</tbody></table>\n";
    if (!board.services.empty()) {
        body += "<h2>Services</h2><table><thead><tr><th>SERVICE</th><th>CLUSTER</th><th>VERSION</th><th>READY</th>"
                "<th>REPLICAS</th><th>ENDPOINT</th><th>STATUS</th><th>AGE</th></tr></thead><tbody>\n";
        for (const auto& s : board.services) {
            const auto& v = s.view;
            const std::string status = s.unreachable ? "UNKNOWN" : v.status;
            std::string replicas = v.min_replicas && v.max_replicas
                                       ? fmt::format("{} ({}-{})", v.desired, *v.min_replicas, *v.max_replicas)
                                       : std::to_string(v.desired);
            body += fmt::format(
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
                "<td>{}</td><td><span class=\"{}\" title=\"{}\">{}</span></td><td class=\"num\">{}</td></tr>\n",
                escape(s.record.name), escape(s.record.cluster), v.version > 0 ? v.version : s.record.version,
                s.unreachable ? std::string("-") : fmt::format("{}/{}", v.ready, v.desired),
                s.unreachable ? std::string("-") : replicas, escape(v.endpoint.empty() ? "-" : v.endpoint),
                state_class(status), escape(s.unreachable ? s.unreachable_reason : v.reason), escape(status),
                human_duration(ctx.now - s.record.created_at));
        }
        body += "</tbody></table>\n";
    }
    if (!board.problems.empty()) {
        body += "<h2>Not answered</h2><ul class=\"problems\">";
        for (const auto& p : board.problems) {
            body += "<li>" + escape(p) + "</li>";
        }
        body += "</ul>\n";
    }
    return page("Jobs", "jobs", body, fmt::format(" data-poll=\"{}\"", ctx.refresh_seconds));
}

std::string render_job(const JobPage& job, const PageContext& ctx) {
    const auto& r = job.view.record;
    std::string body;
    body += fmt::format("<h1>{} <span class=\"muted\">job {}</span> {}</h1>\n", escape(r.name), r.id,
                        state_badge(job.view));
    if (ctx.allow_cancel && !is_terminal(r.state)) {
        body += cancel_form(r.id, r.is_group(), ctx);
    }
    body += "<table class=\"facts\"><tbody>\n";
    if (job.parent) {
        body += facts_row("Group", fmt::format("<a href=\"/jobs/{}\">{} (job {})</a>, member {}", job.parent->id,
                                               escape(job.parent->name), job.parent->id, escape(r.member)));
    }
    if (!r.is_group()) {
        body += facts_row("Cluster", escape(r.cluster) + " <span class=\"muted\">(" + escape(r.backend) + ")</span>");
        body += facts_row("Remote id", escape(r.remote_id.empty() ? "- (not submitted)" : r.remote_id));
        body += facts_row("Nodes", std::to_string(r.num_nodes));
        body += facts_row("GPUs", escape(gpus_of(r)));
    }
    body += facts_row("State", state_badge(job.view) +
                                   (r.reason.empty() && !job.view.unreachable
                                        ? std::string()
                                        : " " + escape(job.view.unreachable ? job.view.unreachable_reason : r.reason)));
    if (r.exit_code) {
        body += facts_row("Exit code", std::to_string(*r.exit_code));
    }
    body += facts_row("Submitted", iso(r.submitted_at) + " (" + human_duration(ctx.now - r.submitted_at) + " ago)");
    body += facts_row("Started", r.started_at ? iso(*r.started_at) : "-");
    body += facts_row("Ended", r.ended_at ? iso(*r.ended_at) : "-");
    body += facts_row("Duration", duration_of(r, ctx.now));
    body += facts_row("Last confirmed", iso(r.updated_at));
    body += "</tbody></table>\n";
    if (job.group) {
        body += "<h2>Members</h2><table class=\"jobs\"><thead><tr><th>ID</th><th>MEMBER</th><th>CLUSTER</th>"
                "<th>STATE</th><th>REASON</th><th>GPUS</th><th>AGE</th><th>DURATION</th></tr></thead><tbody>\n";
        for (const auto& m : job.group->members) {
            job_row(body, m, ctx, escape(m.record.member), "member");
            auto h = job.hosts.find(m.record.member);
            if (h != job.hosts.end()) {
                for (std::size_t rank = 0; rank < h->second.size(); ++rank) {
                    body += fmt::format("<tr class=\"rank\"><td></td><td><span class=\"indent\">rank {}</span></td>"
                                        "<td colspan=\"6\">on {}</td></tr>\n",
                                        rank, escape(h->second[rank]));
                }
            }
        }
        body += "</tbody></table>\n";
    }
    if (!job.attempts.empty()) {
        body += "<h2>History</h2><table><thead><tr><th>ATTEMPT</th><th>CLUSTER</th><th>POOL</th><th>REMOTE ID</th>"
                "<th>SUBMITTED</th><th>OUTCOME</th></tr></thead><tbody>\n";
        for (const auto& a : job.attempts) {
            body += fmt::format("<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                                a.number, escape(a.cluster), escape(a.pool.empty() ? "-" : a.pool),
                                escape(a.remote_id.empty() ? "-" : a.remote_id), iso(a.submitted_at),
                                escape(a.outcome));
        }
        body += fmt::format("<tr><td class=\"num\">{}</td><td>{}</td><td colspan=\"4\">now</td></tr>\n",
                            job.attempts.size() + 1, escape(r.cluster));
        body += "</tbody></table>\n";
    }
    if (const auto events = parse_recoveries(r.recoveries); !events.empty()) {
        // resources.job_recovery: each time the job ran again, as its cluster recorded it.
        body += "<h2>Recoveries</h2><table><thead><tr><th>AFTER ATTEMPT</th><th>WHY</th><th>COUNTED</th></tr>"
                "</thead><tbody>\n";
        for (std::size_t i = 0; i < events.size(); ++i) {
            body += fmt::format("<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>\n", i + 1,
                                escape(describe(events[i])),
                                events[i].kind == RecoveryEvent::Kind::exit_code ? "yes" : "no");
        }
        body += "</tbody></table>\n";
    }
    if (const auto sweep = sweep_of(r)) {
        // A sweep (issue 33): each element with its values, state and exit code, as status ID lists them.
        constexpr std::size_t k_shown = 1000;
        const auto states = parse_element_states(r.elements).value_or(std::vector<ElementState>{});
        body += "<h2>Elements</h2><table><thead><tr><th>#</th><th>VALUES</th><th>STATE</th><th>EXIT CODE</th>"
                "</tr></thead><tbody>\n";
        for (std::size_t i = 0; i < sweep->size() && i < k_shown; ++i) {
            const ElementState e = i < states.size() ? states[i] : ElementState{};
            body += fmt::format(
                "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n", i,
                escape(sweep->keys.empty() ? "-" : sweep_element_label(*sweep, i)), to_string(e.state),
                e.exit_code ? std::to_string(*e.exit_code) : "-");
        }
        if (sweep->size() > k_shown) {
            body +=
                fmt::format("<tr><td colspan=\"4\">and {} more (tandem status {} lists them all)</td></tr>\n",
                            sweep->size() - k_shown, r.id);
        }
        body += "</tbody></table>\n";
    }
    if (!r.is_group()) {
        body += "<h2>Log</h2>";
        if (r.num_nodes > 1) {
            body += "<p class=\"ranks\">Rank:";
            for (int n = 0; n < r.num_nodes; ++n) {
                const bool current = job.node.value_or(-1) == n;
                body += fmt::format(" <a href=\"/jobs/{}?node={}\"{}>{}</a>", r.id, n,
                                    current ? " aria-current=\"page\"" : "", n);
            }
            body += fmt::format(" <a href=\"/jobs/{}\"{}>all</a></p>", r.id,
                                job.node ? "" : " aria-current=\"page\"");
        }
        if (!job.log_error.empty()) {
            body += "<p class=\"problem\">" + escape(job.log_error) + "</p>";
        }
        const std::string stream =
            !is_terminal(r.state) && !r.remote_id.empty()
                ? fmt::format(" data-stream=\"/jobs/{}/log/stream{}\"", r.id,
                              job.node ? fmt::format("?node={}", *job.node) : std::string())
                : std::string();
        body += fmt::format("<pre id=\"log\" class=\"log\"{}>{}</pre>\n", stream,
                            job.log.empty() && job.log_error.empty() ? std::string("(no output yet)")
                                                                     : escape(job.log));
        body += fmt::format("<p class=\"muted\" id=\"log-state\">{}</p>\n",
                            stream.empty() ? "The last lines; `tandem logs " + std::to_string(r.id) + "` prints all."
                                           : std::string("Following while the page is open (JavaScript); reload "
                                                         "for the latest lines without it."));
    }
    body += "<h2>Plan</h2><details><summary>Placement</summary><pre>" + escape(pretty_json(r.placement_json)) +
            "</pre></details><details><summary>Task (secret values removed)</summary><pre>" +
            escape(pretty_json(r.spec_json)) + "</pre></details>\n";
    return page(r.name + " (job " + std::to_string(r.id) + ")", "jobs", body,
                is_terminal(r.state) ? "" : fmt::format(" data-reload=\"{}\"", std::max(ctx.refresh_seconds, 5) * 3));
}

std::string render_infra(const Inventory& inventory, const PageContext&) {
    std::string body = "<h1>Infra</h1>\n";
    for (const auto& c : inventory.clusters) {
        body += fmt::format("<section class=\"cluster\"><h2>{} <span class=\"muted\">{}</span></h2>\n", escape(c.name),
                            to_string(c.kind));
        if (!c.reachable) {
            body += "<p class=\"problem\">unreachable: " + escape(c.error) + "</p></section>\n";
            continue;
        }
        body += "<table class=\"pools\"><thead><tr><th>POOL</th><th>ACCELERATOR</th><th>GPUS FREE/TOTAL</th>"
                "<th></th><th>NODES FREE/TOTAL</th><th>CPUS/NODE</th><th>MEM/NODE</th><th>NODE STATES</th></tr>"
                "</thead><tbody>\n";
        for (const auto& p : c.pools) {
            std::string accel = p.accelerator.empty() ? "-" : p.accelerator;
            if (!p.mig_profiles.empty()) {
                accel += " (MIG)";
            } else if (p.time_sliced) {
                accel += " (time-sliced)";
            }
            const int total = p.gpus_total + p.shared_total;
            const int free = p.gpus_free + p.shared_free;
            const int pct = total > 0 ? std::clamp(free * 100 / total, 0, 100) : 0;
            std::string states;
            for (const auto& s : p.node_states) {
                states += (states.empty() ? "" : ", ") + s;
            }
            body += fmt::format(
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}/{}{}</td><td>{}</td><td class=\"num\">{}/{}</td>"
                "<td class=\"num\">{}</td><td class=\"num\">{}G</td><td>{}</td></tr>\n",
                escape(p.name), escape(accel), p.gpus_free, p.gpus_total,
                p.shared_total > 0 ? fmt::format(" +{}/{} shared", p.shared_free, p.shared_total) : std::string(),
                total > 0 ? fmt::format("<meter min=\"0\" max=\"{}\" value=\"{}\" title=\"{}% free\">{}/{}</meter>",
                                        total, free, pct, free, total)
                          : std::string(),
                p.nodes_free, p.nodes_total, p.cpus_per_node,
                static_cast<long>(p.memory_gb_per_node), escape(states.empty() ? "-" : states));
        }
        body += "</tbody></table></section>\n";
    }
    if (inventory.clusters.empty()) {
        body += "<p>No clusters are configured.</p>";
    }
    return page("Infra", "infra", body);
}

std::string render_message(std::string_view title, std::string_view text) {
    return page(title, "", "<h1>" + escape(title) + "</h1><p>" + escape(text) + "</p>");
}

} // namespace tandem::dashboard
