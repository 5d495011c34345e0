// The dashboard's server (cpp-httplib): routes, the token check on every request, one shared refresh
// of the clusters, and log streams as server-sent events. Each request that reads beyond the shared board
// (a job's log, its history, a cancel, the inventory) has a session of its own, so no two threads share a
// job store connection or a backend.

#include "dashboard/server.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <httplib.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/planning.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "dashboard/auth.hpp"
#include "dashboard/pages.hpp"
#include "sys/clock.hpp"

extern char** environ;

namespace tandem::dashboard {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int k_max_streams = 16;     // log streams at once (each holds a server thread)
constexpr int k_threads = 24;         // so pages are still served with every stream open
constexpr int k_log_tail_lines = 200; // a job page's log: its last lines
constexpr std::size_t k_log_page_bytes = 1 << 20;
constexpr auto k_idle_after = std::chrono::seconds(60); // no page asked for this long: no refreshes

// Diagnostics of the dashboard's own sessions: each text once per ten minutes, so a cluster that stays
// unreachable is one line, not one per refresh.
class NoteOnce {
public:
    void operator()(const app::Event& event) {
        const auto now = Clock::now();
        std::lock_guard lock(m_mutex);
        auto [it, fresh] = m_seen.try_emplace(event.text, now);
        if (!fresh && now - it->second < std::chrono::minutes(10)) {
            return;
        }
        it->second = now;
        cli::note(event.level == app::Event::Level::error ? "tandem: error: " + event.text : "tandem: " + event.text);
    }

private:
    std::mutex m_mutex;
    std::map<std::string, Clock::time_point> m_seen;
};

// The board every page reads, refreshed by one thread while pages look.
class Refresher {
public:
    Refresher(std::function<Result<app::Session>()> make_session, int period_seconds)
        : m_make_session(std::move(make_session)), m_period(period_seconds), m_board(std::make_shared<Board>()) {}

    void start() {
        m_thread = std::thread([this] { run(); });
        m_thread.detach(); // the process ends with Ctrl-C; nothing here needs an orderly stop
    }
    // A page looked: keep refreshing.
    void demand() { m_last_demand.store(Clock::now().time_since_epoch().count()); }
    // Something changed (a cancel): refresh now.
    void poke() {
        std::lock_guard lock(m_mutex);
        m_poked = true;
        m_cv.notify_all();
    }
    std::shared_ptr<const Board> board() {
        std::lock_guard lock(m_mutex);
        return m_board;
    }
    // The first board, waiting up to `limit` for it.
    std::shared_ptr<const Board> first_board(std::chrono::seconds limit) {
        std::unique_lock lock(m_mutex);
        m_cv.wait_for(lock, limit, [&] { return m_board->taken_at != 0; });
        return m_board;
    }

private:
    void run() {
        auto session = m_make_session();
        if (!session) {
            cli::note("tandem: error: " + session.error().message);
            return;
        }
        demand();
        for (;;) {
            auto next = std::make_shared<Board>(take_board(*session));
            {
                std::lock_guard lock(m_mutex);
                m_board = std::move(next);
                m_poked = false;
            }
            m_cv.notify_all();
            std::unique_lock lock(m_mutex);
            const auto taken = Clock::now();
            m_cv.wait_until(lock, taken + std::chrono::seconds(m_period), [&] { return m_poked; });
            // Idle: no page has looked for a while; wait (without asking any cluster) until one does.
            while (!m_poked && Clock::now() - Clock::time_point(Clock::duration(m_last_demand.load())) > k_idle_after) {
                m_cv.wait_for(lock, std::chrono::seconds(1), [&] { return m_poked; });
            }
        }
    }

    std::function<Result<app::Session>()> m_make_session;
    int m_period;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::shared_ptr<const Board> m_board;
    bool m_poked = false;
    std::atomic<Clock::rep> m_last_demand{0};
    std::thread m_thread;
};

ListQuery list_query(const httplib::Request& req) {
    ListQuery q;
    q.state = req.get_param_value("state");
    q.cluster = req.get_param_value("cluster");
    q.name = req.get_param_value("name");
    return q;
}

void send_html(httplib::Response& res, int status, std::string html) {
    res.status = status;
    res.set_content(std::move(html), "text/html; charset=utf-8");
}

void send_message(httplib::Response& res, int status, std::string_view title, std::string_view text) {
    send_html(res, status, render_message(title, text));
}

int status_for(ErrorKind kind) {
    switch (kind) {
    case ErrorKind::not_found:
        return 404;
    case ErrorKind::usage:
    case ErrorKind::invalid_spec:
    case ErrorKind::config:
        return 400;
    case ErrorKind::unavailable:
    case ErrorKind::timeout:
        return 504;
    default:
        return 502;
    }
}

std::optional<int> node_param(const httplib::Request& req) {
    if (!req.has_param("node")) {
        return std::nullopt;
    }
    const std::string text = req.get_param_value("node");
    if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos) {
        return -1;
    }
    return std::stoi(text);
}

std::string url_host(const std::string& host) {
    return host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
}

void open_browser(const std::string& url) {
    const char* argv[] = {"xdg-open", url.c_str(), nullptr};
    pid_t pid = 0;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const int rc = posix_spawnp(&pid, "xdg-open", &actions, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        cli::note("tandem: --open: no xdg-open here; open the URL above yourself");
        return;
    }
    std::thread([pid] { ::waitpid(pid, nullptr, 0); }).detach();
}

} // namespace

Result<int> serve(app::Session&, const cli::DashboardFlags& flags) {
    std::signal(SIGPIPE, SIG_IGN); // a browser that goes away is a closed socket, not the end of the server
    auto notes = std::make_shared<NoteOnce>();
    auto make_session = [notes]() { return app::Session::create(app::system_seams([notes](const app::Event& e) {
                                        (*notes)(e);
                                    })); };
    const std::string token = sys::random_hex(32);
    const std::string csrf = sys::random_hex(32);
    Refresher refresher(make_session, flags.refresh_seconds);
    std::atomic<int> streams{0};

    httplib::Server server;
    server.new_task_queue = [] { return new httplib::ThreadPool(k_threads); };
    server.set_read_timeout(10, 0);
    server.set_write_timeout(10, 0);
    server.set_payload_max_length(64 * 1024);
    server.set_keep_alive_max_count(100);
    server.set_default_headers({
        {"Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
        {"X-Content-Type-Options", "nosniff"},
        {"Referrer-Policy", "same-origin"},
        {"X-Frame-Options", "DENY"},
        {"Cache-Control", "no-store"},
    });
    int port = flags.port;
    std::string cookie_key; // named once the port is known

    // Every request but the two assets needs the token: from the URL (then kept in a cookie for the links
    // of the page) or from that cookie.
    server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
        if (req.path == "/static/tandem.css" || req.path == "/static/tandem.js") {
            return httplib::Server::HandlerResponse::Unhandled;
        }
        std::optional<std::string> from_query, from_cookie;
        if (req.has_param("token")) {
            from_query = req.get_param_value("token");
        }
        if (req.has_header("Cookie")) {
            from_cookie = cookie_value(req.get_header_value("Cookie"), cookie_key);
        }
        switch (check_access(from_query, from_cookie, token)) {
        case Access::granted:
            if (from_query) {
                res.set_header("Set-Cookie",
                               fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict", cookie_key, token));
            }
            return httplib::Server::HandlerResponse::Unhandled;
        case Access::no_token:
            send_message(res, 401, "Token needed",
                         "This dashboard serves only the URL `tandem dashboard` printed, with its token.");
            res.set_header("WWW-Authenticate", "Bearer realm=\"tandem dashboard\"");
            return httplib::Server::HandlerResponse::Handled;
        case Access::wrong_token:
            break;
        }
        send_message(res, 403, "Wrong token",
                     "The token does not match this dashboard's (a dashboard of an earlier run?): open the URL "
                     "`tandem dashboard` printed.");
        return httplib::Server::HandlerResponse::Handled;
    });
    server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) {
            send_message(res, res.status, res.status == 404 ? "Not found" : "Error",
                         res.status == 404 ? "No such page." : fmt::format("HTTP {}", res.status));
        }
    });

    server.Get("/static/tandem.css", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(std::string(k_stylesheet), "text/css; charset=utf-8");
        res.set_header("Cache-Control", "max-age=3600");
    });
    server.Get("/static/tandem.js", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(std::string(k_script), "text/javascript; charset=utf-8");
        res.set_header("Cache-Control", "max-age=3600");
    });
    auto page_context = [&] {
        PageContext ctx;
        ctx.now = sys::now_seconds();
        ctx.csrf = csrf;
        ctx.allow_cancel = flags.allow_cancel;
        ctx.refresh_seconds = flags.refresh_seconds;
        return ctx;
    };
    server.Get("/", [&](const httplib::Request& req, httplib::Response& res) {
        refresher.demand();
        auto board = refresher.first_board(std::chrono::seconds(60));
        send_html(res, 200, render_list(*board, list_query(req), page_context()));
    });
    server.Get("/rows", [&](const httplib::Request& req, httplib::Response& res) {
        refresher.demand();
        auto board = refresher.board();
        nlohmann::json j{{"rows", render_rows(*board, list_query(req), page_context())},
                         {"taken", board->taken_at ? "as of " + cli::iso_time(board->taken_at) : "asking the clusters…"}};
        res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
    });
    server.Get("/infra", [&](const httplib::Request&, httplib::Response& res) {
        auto session = make_session();
        if (!session) {
            return send_message(res, 500, "Error", session.error().message);
        }
        // The backends cache their inventory (STATE/cache): every open infra page within 30 s shares one.
        auto inventory = app::gather_inventory(*session, std::chrono::seconds(30));
        if (!inventory) {
            return send_message(res, status_for(inventory.error().kind), "Infra", inventory.error().message);
        }
        send_html(res, 200, render_infra(*inventory, page_context()));
    });
    server.Get(R"(/jobs/(\d{1,15}))", [&](const httplib::Request& req, httplib::Response& res) {
        refresher.demand();
        const std::string id_text = req.matches[1];
        auto session = make_session();
        if (!session) {
            return send_message(res, 500, "Error", session.error().message);
        }
        auto record = app::find_job(*session, id_text);
        if (!record) {
            return send_message(res, status_for(record.error().kind), "Job " + id_text, record.error().message);
        }
        JobPage job;
        auto board = refresher.board();
        if (const auto* seen = find_on_board(*board, record->id)) {
            job.view = *seen;
        } else {
            job.view.record = *record;
        }
        job.node = node_param(req);
        if (job.node && (*job.node < 0 || *job.node >= record->num_nodes)) {
            return send_message(res, 400, "Job " + id_text,
                                fmt::format("node: job {} has {} node(s), ranks 0..{}", record->id,
                                            record->num_nodes, record->num_nodes - 1));
        }
        if (auto store = session->store()) {
            if (auto attempts = (*store)->attempts(record->id)) {
                job.attempts = std::move(*attempts);
            }
        }
        if (record->is_group()) {
            auto g = board->groups.find(record->id);
            if (g != board->groups.end()) {
                job.group = g->second;
            } else if (auto fresh = app::refresh_group(*session, record->id)) {
                job.group = std::move(*fresh);
            }
            job.hosts = app::published_hosts(job.group ? job.group->group.record : *record);
        } else {
            if (record->parent_id) {
                if (auto parent = app::find_job(*session, std::to_string(*record->parent_id))) {
                    job.parent = std::move(*parent);
                }
            }
            if (record->remote_id.empty()) {
                job.log_error = "Never submitted: " + record->reason;
            } else if (auto backend = session->backend(record->cluster); !backend) {
                job.log_error = backend.error().message;
            } else {
                auto read = (*backend)->logs(*record, LogOptions{false, k_log_tail_lines, job.node},
                                             [&](std::string_view chunk) {
                                                 job.log.append(chunk);
                                                 return job.log.size() < k_log_page_bytes;
                                             });
                if (!read) {
                    job.log_error = "The log could not be read: " + read.error().message;
                }
            }
        }
        send_html(res, 200, render_job(job, page_context()));
    });
    server.Get(R"(/jobs/(\d{1,15})/log/stream)", [&](const httplib::Request& req, httplib::Response& res) {
        const std::string id_text = req.matches[1];
        const auto node = node_param(req);
        if (node && *node < 0) {
            return send_message(res, 400, "Log", "node: a rank number");
        }
        if (streams.fetch_add(1) >= k_max_streams) {
            streams.fetch_sub(1);
            return send_message(res, 503, "Busy", fmt::format("{} logs are followed already", k_max_streams));
        }
        res.set_header("X-Accel-Buffering", "no");
        res.set_chunked_content_provider(
            "text/event-stream",
            [&, id_text, node](std::size_t, httplib::DataSink& sink) {
                auto event = [&](std::string_view name, const std::string& text) {
                    std::string e = name.empty() ? "" : fmt::format("event: {}\n", name);
                    e += "data: " + nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                         "\n\n";
                    return sink.is_writable() && sink.write(e.data(), e.size());
                };
                auto session = make_session();
                auto record = session ? app::find_job(*session, id_text) : tl::unexpected(session.error());
                if (!record) {
                    event("end", record.error().message);
                    sink.done();
                    return true;
                }
                auto backend = session->backend(record->cluster);
                if (!backend) {
                    event("end", backend.error().message);
                    sink.done();
                    return true;
                }
                std::string pending;
                bool alive = true;
                auto read = (*backend)->logs(*record, LogOptions{true, k_log_tail_lines, node},
                                             [&](std::string_view chunk) {
                                                 alive = event("", take_complete_utf8(pending, chunk));
                                                 return alive;
                                             });
                if (alive) {
                    if (!read) {
                        event("end", "The log stream stopped: " + read.error().message);
                    } else {
                        auto views = app::refresh_jobs(*session, {*record});
                        const auto& r = views.front().record;
                        event("end", fmt::format("Job {} {}{}.", r.id, to_string(r.state),
                                                 r.reason.empty() ? "" : " (" + r.reason + ")"));
                    }
                    sink.done();
                }
                return alive;
            },
            [&streams](bool) { streams.fetch_sub(1); });
    });
    server.Post(R"(/jobs/(\d{1,15})/cancel)", [&](const httplib::Request& req, httplib::Response& res) {
        if (!flags.allow_cancel) {
            return send_message(res, 403, "Read-only",
                                "This dashboard is read-only: start it with --allow-cancel to cancel from it.");
        }
        if (!post_allowed(req.get_param_value("csrf"), csrf, req.get_header_value("Origin"),
                          req.get_header_value("Host"))) {
            return send_message(res, 403, "Refused", "The cancel did not come from this dashboard's page.");
        }
        const std::string id_text = req.matches[1];
        auto session = make_session();
        if (!session) {
            return send_message(res, 500, "Error", session.error().message);
        }
        auto record = app::find_job(*session, id_text);
        if (!record) {
            return send_message(res, status_for(record.error().kind), "Job " + id_text, record.error().message);
        }
        Status done;
        if (record->is_group()) {
            auto view = app::refresh_group(*session, record->id);
            done = view ? (is_terminal(view->group.record.state) ? Status{} : app::cancel_group(*session, *view))
                        : Status(tl::unexpected(view.error()));
        } else {
            auto views = app::refresh_jobs(*session, {*record});
            JobRecord target = views.front().record;
            if (!is_terminal(target.state)) {
                done = app::cancel_job(*session, target, std::string(k_user_cancel_reason));
            }
        }
        if (!done) {
            return send_message(res, status_for(done.error().kind), "Cancel failed",
                                fmt::format("job {}: {}", record->id, done.error().message));
        }
        cli::note(fmt::format("tandem: job {} ({}) cancelled from the dashboard", record->id, record->name));
        refresher.poke();
        res.status = 303;
        res.set_header("Location", "/jobs/" + id_text);
    });

    const std::string display_host = url_host(flags.host);
    if (port == 0) {
        port = server.bind_to_any_port(flags.host);
        if (port < 0) {
            return fail(ErrorKind::unavailable, fmt::format("cannot listen on {}: no free port", flags.host));
        }
    } else if (!server.bind_to_port(flags.host, port)) {
        return fail(ErrorKind::unavailable, fmt::format("cannot listen on {}:{} (in use, or not an address here)",
                                                        display_host, port),
                    "pick another --port, or --port 0 for any free one");
    }
    cookie_key = cookie_name(port);
    refresher.start();
    const std::string url = fmt::format("http://{}:{}/?token={}", display_host, port, token);
    cli::print_stdout(url + "\n");
    std::fflush(stdout);
    cli::note(fmt::format("tandem: dashboard on http://{}:{}/ ({}){}; Ctrl-C stops it", display_host, port,
                          flags.allow_cancel ? "cancel allowed" : "read-only",
                          cli::is_loopback_host(flags.host) ? "" : fmt::format(", exposed on {}", flags.host)));
    if (flags.open) {
        open_browser(url);
    }
    if (!server.listen_after_bind()) {
        return fail(ErrorKind::internal, "the dashboard's server stopped");
    }
    return cli::exit_code::ok;
}

} // namespace tandem::dashboard
