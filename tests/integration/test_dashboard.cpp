// `tandem dashboard` in a real headless Chromium (Debian's chromium, driven through the DevTools protocol by
// tests/browser/cdp.py), against the local backend and the real Slurm testbed (scripts/testbed/slurm up):
// the list shows both clusters' jobs with their states, a link leads to a job page with its log, a running
// job's log is followed live, a request without the token is refused, a screenshot is taken, and with
// --allow-cancel a cancel from the page reaches slurmctld. A missing chromium fails the test (it is
// installed by scripts/install-deps with TANDEM_TEST_DEPS=1, as scripts/test does).

#include <csignal>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "slurm_testbed.hpp"

using namespace tandem_test;
using nlohmann::json;

namespace {

std::string cdp_script() {
    return std::string(TANDEM_SOURCE_DIR) + "/tests/browser/cdp.py";
}

// A home with `local` and `lab` (the Slurm testbed over slurmrestd).
struct DashHome {
    TempHome home;
    RunOptions options;
    DashHome() {
        const auto& s = slurm_env();
        home.write_config("clusters:\n"
                          "  - name: local\n"
                          "    type: local\n"
                          "  - name: lab\n"
                          "    type: slurm\n"
                          "    discover_jobs: false\n"
                          "    rest:\n"
                          "      url: " + s.at("SLURM_REST_URL") + "\n"
                          "      user: " + s.at("SLURM_JWT_USER") + "\n"
                          "      token_env: SLURM_JWT\n" +
                          rest_api_pin_line() + default_partition_line() +
                          "    home: " + s.at("SLURM_USER_HOME") + "\n");
        options.env = home.base_env();
        options.env["SLURM_JWT"] = s.at("SLURM_JWT");
    }
    RunResult tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) const {
        RunOptions o = options;
        o.timeout = timeout;
        return home.tandem(args, o);
    }
    int launch(const std::string& name, const std::string& yaml) const {
        const auto file = home.write(name + ".yaml", yaml);
        auto r = tandem({"launch", "-d", "--json", file});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out)["id"].get<int>();
    }
    json job(int id) const {
        auto r = tandem({"status", std::to_string(id), "--json"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out)["jobs"][0];
    }
    void wait_state(int id, const std::string& state, std::chrono::seconds limit = 90s) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        json j;
        while (std::chrono::steady_clock::now() < deadline) {
            j = job(id);
            if (j["state"] == state) {
                return;
            }
            std::this_thread::sleep_for(500ms);
        }
        INFO(j.dump());
        FAIL("job " << id << " never reached " << state);
    }
};

// A dashboard started by the test: its stdout (the URL) goes to a file the test reads.
struct Dashboard {
    std::string url, base, token;
    std::optional<Child> child;
    Dashboard(const DashHome& h, const std::vector<std::string>& flags) {
        const std::string out = h.home.path("dashboard.url");
        std::string cmd = "exec '" + tandem_bin() + "' dashboard --port 0 --refresh 2";
        for (const auto& f : flags) {
            cmd += " " + f;
        }
        RunOptions o = h.options;
        o.timeout = 300s;
        o.cwd = h.home.root();
        child.emplace(std::vector<std::string>{"/bin/sh", "-c", cmd + " >'" + out + "'"}, o);
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (std::chrono::steady_clock::now() < deadline) {
            auto text = read_file(out);
            if (text && text->find('\n') != std::string::npos) {
                url = text->substr(0, text->find('\n'));
                break;
            }
            std::this_thread::sleep_for(100ms);
        }
        REQUIRE_FALSE(url.empty());
        REQUIRE(url.rfind("http://127.0.0.1:", 0) == 0);
        base = url.substr(0, url.find("/?token="));
        token = url.substr(url.find("token=") + 6);
        REQUIRE(token.size() == 32);
    }
    ~Dashboard() {
        if (child) {
            child->signal_group(SIGINT);
            auto r = child->wait();
            // Ctrl-C ends it at once: nothing stays running.
            CHECK(r.signal == SIGINT);
        }
    }
};

RunResult curl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/curl", "-s", "-S", "-m", "30"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, RunOptions{{}, "", 40s, "", {}});
}

std::string http_code(const std::vector<std::string>& args) {
    std::vector<std::string> a{"-o", "/dev/null", "-w", "%{http_code}"};
    a.insert(a.end(), args.begin(), args.end());
    return curl(a).out;
}

// Runs the browser through `steps`; returns each step's value (JSON lines of cdp.py).
std::vector<json> browse(const std::vector<std::string>& steps) {
    std::vector<std::string> argv{"/usr/bin/python3", "-B", cdp_script()};
    argv.insert(argv.end(), steps.begin(), steps.end());
    auto r = run(argv, RunOptions{{}, "", 180s, "", {}});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    std::vector<json> values;
    for (const auto& line : split_lines(r.out)) {
        if (!line.empty()) {
            values.push_back(json::parse(line)["value"]);
        }
    }
    REQUIRE(values.size() >= 1);
    return values;
}

} // namespace

TEST_CASE("dashboard: the page lists local and Slurm jobs, links to a job's log, follows a running one, and refuses a request without the token",
          "[dashboard]") {
    REQUIRE(file_exists("/usr/bin/chromium"));
    DashHome h;
    const std::string stamp = std::to_string(::getpid());
    const int local = h.launch("local-done", "name: dash-local-" + stamp + "\nresources:\n  infra: local\n"
                                             "run: echo local-marker-" + stamp + "\n");
    const int done = h.launch("slurm-done", "name: dash-slurm-done-" + stamp + "\nresources:\n  infra: slurm/lab\n"
                                            "run: echo 'slurm-marker-" + stamp + " <b>not bold</b>'\n");
    const int ticking = h.launch("slurm-tick", "name: dash-slurm-tick-" + stamp + "\nresources:\n  infra: slurm/lab\n"
                                               "run: |\n  for i in $(seq 1 40); do echo tick-$i; sleep 1; done\n");
    h.wait_state(local, "SUCCEEDED");
    h.wait_state(done, "SUCCEEDED");
    h.wait_state(ticking, "RUNNING");

    Dashboard d(h, {});
    // The token guards every page: none is 401, a wrong one 403, the right one 200 (and a cookie).
    CHECK(http_code({d.base + "/"}) == "401");
    CHECK(http_code({d.base + "/jobs/" + std::to_string(done)}) == "401");
    CHECK(http_code({d.base + "/?token=" + std::string(32, '0')}) == "403");
    CHECK(http_code({"-H", "Cookie: tandem_dashboard_" + d.base.substr(d.base.rfind(':') + 1) + "=nope",
                     d.base + "/infra"}) == "403");
    CHECK(http_code({d.url}) == "200");
    auto headers = curl({"-D", "-", "-o", "/dev/null", d.url});
    CHECK(contains(headers.out, "Set-Cookie: tandem_dashboard_"));
    CHECK(contains(headers.out, "HttpOnly; SameSite=Strict"));
    CHECK(contains(headers.out, "Content-Security-Policy: default-src 'none'"));
    // Read-only by default: no cancel, even with the token.
    CHECK(http_code({"-X", "POST", "-d", "csrf=x", d.base + "/jobs/" + std::to_string(ticking) + "/cancel?token=" +
                                                       d.token}) == "403");

    const std::string shot = h.home.path("dashboard.png");
    auto v = browse({"goto", d.url, "wait-text", "dash-slurm-tick-" + stamp, "30", "text",
                     "click-nav", "a[href=\"/jobs/" + std::to_string(done) + "\"]", "wait-text",
                     "slurm-marker-" + stamp, "30", "html",
                     "goto", d.base + "/jobs/" + std::to_string(ticking), "wait-text", "tick-4", "30",
                     "goto", d.base + "/", "screenshot", shot, "eval",
                     "getComputedStyle(document.body).backgroundColor", "dark", "eval",
                     "getComputedStyle(document.body).backgroundColor", "goto", d.base + "/infra", "text"});
    const std::string list = v[2].get<std::string>();
    INFO(list);
    // Both clusters' jobs, with their states, in the table (rows are tab-separated in innerText).
    CHECK(contains(list, std::to_string(local) + "\tdash-local-" + stamp + "\tlocal\tSUCCEEDED"));
    CHECK(contains(list, std::to_string(done) + "\tdash-slurm-done-" + stamp + "\tlab\tSUCCEEDED"));
    CHECK(contains(list, std::to_string(ticking) + "\tdash-slurm-tick-" + stamp + "\tlab\tRUNNING"));
    CHECK(v[3] == "/jobs/" + std::to_string(done));
    // The log's markup is text, not markup.
    CHECK(contains(v[5].get<std::string>(), "slurm-marker-" + stamp + " &lt;b&gt;not bold&lt;/b&gt;"));
    // The screenshot is a real PNG of some size.
    auto png = read_file(shot);
    REQUIRE(png);
    CHECK(png->size() > 10000);
    CHECK(png->substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
    // Readable in the dark: the page follows the browser's colour scheme.
    CHECK(v[10] == "rgb(255, 255, 255)");
    CHECK(v[12] == "rgb(17, 20, 24)");
    // The infra page: both clusters and the testbed's GPU pool.
    CHECK(contains(v[14].get<std::string>(), "lab slurm"));
    CHECK(contains(v[14].get<std::string>(), "local local"));
    CHECK(contains(v[14].get<std::string>(), "h100"));
    h.tandem({"cancel", std::to_string(ticking)});
}

TEST_CASE("dashboard: with --allow-cancel, cancel from the page reaches slurmctld", "[dashboard]") {
    REQUIRE(file_exists("/usr/bin/chromium"));
    DashHome h;
    const std::string stamp = std::to_string(::getpid());
    const int id = h.launch("slurm-long", "name: dash-cancel-" + stamp + "\nresources:\n  infra: slurm/lab\n"
                                          "run: sleep 300\n");
    h.wait_state(id, "RUNNING");
    const std::string remote = h.job(id)["remote_id"].get<std::string>();
    Dashboard d(h, {"--allow-cancel"});
    // A forged POST (the right token, not the page's CSRF value) is refused and cancels nothing.
    CHECK(http_code({"-X", "POST", "-d", "csrf=" + std::string(32, 'a'),
                     d.base + "/jobs/" + std::to_string(id) + "/cancel?token=" + d.token}) == "403");
    CHECK(h.job(id)["state"] == "RUNNING");
    auto v = browse({"goto", d.url.substr(0, d.url.find("/?")) + "/jobs/" + std::to_string(id) + "?token=" + d.token,
                     "open", "details.cancel", "click-nav", "#cancel-" + std::to_string(id), "wait-text",
                     "CANCELLED", "30"});
    CHECK(v[2] == "/jobs/" + std::to_string(id));
    CHECK(h.job(id)["state"] == "CANCELLED");
    // slurmctld has it cancelled too.
    auto q = slurm_command({"scontrol", "show", "job", remote});
    INFO(q);
    CHECK(contains(q.out, "JobState=CANCELLED"));
}
