#include "app/session.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "core/job.hpp"
#include "core/quantity.hpp"
#include "net/http_client.hpp"
#include "sys/clock.hpp"
#include "sys/environment.hpp"
#include "sys/fault_point.hpp"
#include "sys/files.hpp"

namespace tandem::app {

namespace {

std::string libcurl_marker(const Paths& paths) {
    return paths.state_dir + "/cache/uses-libcurl";
}

} // namespace

Seams system_seams(EventSink events) {
    Seams s;
    s.getenv = sys::getenv;
    s.now = sys::now_seconds;
    s.new_token = sys::new_submit_token;
    s.current_dir = sys::current_dir;
    s.host_name = sys::host_name;
    s.files = sys::real_files();
    s.make_backend = [](const ClusterConfig& c, const std::string& state_dir) {
        return backends::make_backend(c, backends::BackendContext{state_dir, sys::getenv});
    };
    s.fault_point = [](std::string_view point) { sys::fault_point(point); };
    s.events = std::move(events);
    return s;
}

void Session::warm_up() {
    if (auto paths = resolve_paths(sys::getenv);
        paths && ::access(libcurl_marker(*paths).c_str(), F_OK) == 0) {
        net::start_libcurl_preload();
    }
}

Session::Session(Paths paths, Config config, Seams seams)
    : m_paths(std::move(paths)), m_config(std::move(config)), m_seams(std::move(seams)) {}

Session::~Session() = default;

Result<Session> Session::create(Seams seams) {
    auto paths = resolve_paths(seams.getenv);
    if (!paths) {
        return tl::unexpected(paths.error());
    }
    auto config = load_config(*paths, seams.files);
    if (!config) {
        return tl::unexpected(config.error());
    }
    Session session(std::move(*paths), std::move(*config), std::move(seams));
    backends::add_discovered_clusters(session.m_config, session.m_seams.getenv);
    const auto& clusters = session.m_config.clusters;
    // libcurl loads beside the task and the job store when some cluster will need it. The marker lets the
    // next command start that load before it has even parsed the config (warm_up).
    const bool needs_libcurl = std::any_of(clusters.begin(), clusters.end(), backends::uses_libcurl);
    if (needs_libcurl) {
        net::start_libcurl_preload();
    }
    const std::string marker = libcurl_marker(session.m_paths);
    if (needs_libcurl != (::access(marker.c_str(), F_OK) == 0)) {
        std::error_code ec;
        if (needs_libcurl) {
            std::filesystem::create_directories(std::filesystem::path(marker).parent_path(), ec);
            std::ofstream touch(marker); // best effort: without it the load only starts later
        } else {
            std::filesystem::remove(marker, ec);
        }
    }
    return session;
}

std::vector<BackendKind> Session::configured_kinds() const {
    std::vector<BackendKind> kinds;
    for (const auto& c : m_config.clusters) {
        if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end()) {
            kinds.push_back(c.kind);
        }
    }
    return kinds;
}

LoadOptions Session::load_options() const {
    return LoadOptions{m_seams.current_dir ? m_seams.current_dir() : std::string(), m_seams.getenv,
                       m_seams.files};
}

void Session::fault_point(std::string_view point) const {
    if (m_seams.fault_point) {
        m_seams.fault_point(point);
    }
}

void Session::progress(std::string text) const {
    if (m_seams.events) {
        m_seams.events(Event{Event::Level::progress, std::move(text)});
    }
}

void Session::error(std::string text) const {
    if (m_seams.events) {
        m_seams.events(Event{Event::Level::error, std::move(text)});
    }
}

Result<store::JobStore*> Session::store() {
    if (!m_store) {
        std::error_code ec;
        std::filesystem::create_directories(m_paths.state_dir, ec);
        if (ec) {
            return fail(ErrorKind::internal, fmt::format("cannot create the state folder {}: {}",
                                                         m_paths.state_dir, ec.message()));
        }
        auto opened = store::JobStore::open(m_paths.state_dir + "/jobs.db");
        if (!opened) {
            return tl::unexpected(opened.error());
        }
        m_store = std::move(*opened);
    }
    return m_store.get();
}

Result<Backend*> Session::backend(const std::string& cluster) {
    if (auto it = m_backends.find(cluster); it != m_backends.end()) {
        return it->second.get();
    }
    for (const auto& c : m_config.clusters) {
        if (c.name == cluster) {
            auto made = m_seams.make_backend(c, m_paths.state_dir);
            if (!made) {
                return tl::unexpected(made.error());
            }
            return (m_backends[cluster] = std::move(*made)).get();
        }
    }
    return fail(ErrorKind::config, fmt::format("cluster '{}' is not in the config", cluster),
                m_config.path.empty() ? "add it to the clusters list in config.yaml"
                                      : fmt::format("add it to the clusters list in {}", m_config.path));
}

Result<std::vector<Backend*>> Session::backends() {
    std::vector<Backend*> out;
    for (const auto& c : m_config.clusters) {
        auto b = backend(c.name);
        if (!b) {
            return tl::unexpected(b.error());
        }
        out.push_back(*b);
    }
    return out;
}

std::chrono::steady_clock::duration Session::deadline(const std::string& cluster) const {
    int timeout = 30;
    for (const auto& c : m_config.clusters) {
        if (c.name != cluster) {
            continue;
        }
        if (auto it = c.settings.find("timeout_seconds"); it != c.settings.end()) {
            // The backend's own settings check rejected a bad value already; here it only sizes the wait.
            if (auto n = parse_positive_int(it->is_string() ? it->get<std::string>() : it->dump())) {
                timeout = *n;
            }
        }
    }
    return std::chrono::seconds(2 * timeout + 5);
}

void Session::mark_unreachable(const std::string& cluster, std::string why) {
    m_unreachable[cluster] = std::move(why);
}

const std::string* Session::unreachable(const std::string& cluster) const {
    auto it = m_unreachable.find(cluster);
    return it == m_unreachable.end() ? nullptr : &it->second;
}

void Session::abandon(const std::string& cluster) {
    if (auto it = m_backends.find(cluster); it != m_backends.end()) {
        m_abandoned.push_back(it->second.release());
        m_backends.erase(it);
    }
}

} // namespace tandem::app
