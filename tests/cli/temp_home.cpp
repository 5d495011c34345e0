// The throwaway HOME/TANDEM_HOME of one scenario, running tandem inside it, and small file helpers.

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "run_tandem.hpp"

extern char** environ;

namespace tandem_test {

namespace fs = std::filesystem;

TempHome::TempHome() {
    std::string pattern = (fs::temp_directory_path() / "tandem-cli-XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    REQUIRE(made != nullptr);
    m_root = real_path(made);
    fs::create_directories(home());
    fs::create_directories(tandem_home());
}

TempHome::~TempHome() {
    // Jobs a failed test left running are ours: end their process groups before removing their folder.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(state_dir() + "/jobs", ec)) {
        if (auto text = read_file((entry.path() / "pid").string())) {
            const pid_t pid = static_cast<pid_t>(std::atoi(text->c_str()));
            if (pid <= 1 || process_gone(pid)) {
                continue;
            }
            // Its real group (not assumed to be its pid), never our own.
            const pid_t pgid = getpgid(pid);
            if (pgid > 1 && pgid != getpgrp()) {
                ::kill(-pgid, SIGKILL);
            }
            ::kill(pid, SIGKILL);
        }
    }
    fs::remove_all(m_root, ec);
}

std::string TempHome::write(const std::string& relative, const std::string& text) const {
    fs::path p = fs::path(m_root) / relative;
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    REQUIRE(out.good());
    return p.string();
}

std::string TempHome::write_config(const std::string& text) const {
    return write("tandem/config.yaml", text);
}

EnvOverrides TempHome::base_env() const {
    EnvOverrides env;
    static const char* const k_prefixes[] = {"TANDEM_", "SKYPILOT_", "SLURM_", "KUBE", "XDG_"};
    static const char* const k_names[] = {"NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "COLUMNS"};
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string kv(*e);
        std::string name = kv.substr(0, kv.find('='));
        for (const char* p : k_prefixes) {
            if (name.rfind(p, 0) == 0) {
                env[name] = std::nullopt;
            }
        }
    }
    for (const char* n : k_names) {
        env[n] = std::nullopt;
    }
    env["HOME"] = home();
    env["TANDEM_HOME"] = tandem_home();
    env["TERM"] = "xterm-256color";
    return env;
}

Child TempHome::start_tandem(const std::vector<std::string>& args, RunOptions options) const {
    EnvOverrides env = base_env();
    for (const auto& [k, v] : options.env) {
        env[k] = v;
    }
    options.env = std::move(env);
    if (options.cwd.empty()) {
        options.cwd = m_root;
    }
    std::vector<std::string> argv{tandem_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return Child(argv, options);
}

RunResult TempHome::tandem(const std::vector<std::string>& args, RunOptions options) const {
    return start_tandem(args, std::move(options)).wait();
}

nlohmann::json TempHome::jobs_json() const {
    auto r = tandem({"status", "--all", "--json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j.contains("jobs"));
    REQUIRE(j["jobs"].is_array());
    return j["jobs"];
}

nlohmann::json TempHome::job_json(int id) const {
    auto r = tandem({"status", std::to_string(id), "--json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j["jobs"].is_array());
    REQUIRE(j["jobs"].size() == 1);
    return j["jobs"][0];
}

nlohmann::json TempHome::wait_for_terminal(int id, std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    nlohmann::json job = job_json(id);
    while (!is_terminal_state(job.value("state", "")) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100ms);
        job = job_json(id);
    }
    return job;
}

std::optional<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool file_exists(const std::string& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

std::string real_path(const std::string& path) {
    char buf[PATH_MAX];
    return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

std::vector<std::string> list_files(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        if (it->is_regular_file(ec)) {
            out.push_back(it->path().string());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

Concurrency most_at_once(const std::string& logs) {
    std::vector<std::pair<long long, int>> edges; // (time, +1 start / -1 end)
    for (const auto& line : split_lines(logs)) {
        const auto at = line.find("] ");
        std::istringstream words(at == std::string::npos ? "" : line.substr(at + 2));
        std::string word;
        long long ns = 0;
        if (words >> word >> ns && (word == "start" || word == "end")) {
            edges.emplace_back(ns, word == "start" ? 1 : -1);
        }
    }
    std::sort(edges.begin(), edges.end());
    Concurrency out;
    out.edges = edges.size();
    int running = 0;
    for (const auto& [t, d] : edges) {
        running += d;
        out.most = std::max(out.most, running);
    }
    return out;
}

std::string out_of_order(const std::string& haystack, const std::vector<std::string>& needles) {
    std::size_t from = 0;
    for (const auto& n : needles) {
        const auto at = haystack.find(n, from);
        if (at == std::string::npos) {
            return (haystack.find(n) == std::string::npos ? "missing: " : "out of order: ") + n;
        }
        from = at + n.size();
    }
    return {};
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

std::string tandem_bin() {
    return TANDEM_BIN;
}
std::string examples_dir() {
    return TANDEM_EXAMPLES;
}
std::string fixtures_dir() {
    return std::string(TANDEM_FIXTURES) + "/cli";
}

bool is_terminal_state(const std::string& state) {
    return state == "SUCCEEDED" || state == "FAILED" || state == "CANCELLED";
}

} // namespace tandem_test
