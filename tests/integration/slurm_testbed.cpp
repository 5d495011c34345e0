#include "slurm_testbed.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

namespace tandem_test {

bool testbed_is_24() {
    const char* which = std::getenv("TANDEM_TEST_SLURM");
    return which && std::string(which) == "slurm24";
}

std::string slurm_release() {
    return testbed_is_24() ? "24.11" : "22.05";
}

std::string testbed_script() {
    return std::string(TANDEM_SOURCE_DIR) +
           (testbed_is_24() ? "/scripts/testbed/slurm24" : "/scripts/testbed/slurm");
}

std::vector<std::pair<std::string, std::string>> slurm_jobs_named(const std::string& name) {
    std::map<long, std::string> by_id;
    auto add = [&](const std::string& id, const std::string& state) {
        if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) {
            by_id.emplace(std::stol(id), state); // the first source wins
        }
    };
    auto add_lines = [&](const std::string& out) {
        std::istringstream lines(out);
        for (std::string line; std::getline(lines, line);) {
            const auto bar = line.find('|');
            if (bar != std::string::npos) {
                add(line.substr(0, bar), line.substr(bar + 1));
            }
        }
    };
    if (slurm_accounting()) {
        auto r = slurm_command(
            {"sacct", "-a", "-X", "-n", "-P", "--name", name, "-S", "now-1hours", "-o", "JobID,State"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        add_lines(r.out);
    } else {
        auto r = slurm_command({"squeue", "-h", "-t", "all", "-n", name, "-o", "%i|%T"});
        INFO(r);
        REQUIRE(r.exit_code == 0);
        add_lines(r.out);
        // Jobs that ended (and may have left slurmctld): "JobId=7 ... Name=NAME JobState=CANCELLED ...".
        std::ifstream log(slurm_env().at("SLURM_JOBCOMP"));
        for (std::string line; std::getline(log, line);) {
            std::map<std::string, std::string> fields;
            std::istringstream words(line);
            for (std::string word; words >> word;) {
                if (const auto eq = word.find('='); eq != std::string::npos) {
                    fields.emplace(word.substr(0, eq), word.substr(eq + 1));
                }
            }
            if (fields["Name"] == name) {
                add(fields["JobId"], fields["JobState"]);
            }
        }
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [id, state] : by_id) {
        out.emplace_back(std::to_string(id), state);
    }
    return out;
}

std::string rest_api_pin_line() {
    const char* pinned = std::getenv("TANDEM_TEST_SLURM_API");
    return pinned && *pinned ? std::string("      api_version: ") + pinned + "\n" : std::string();
}

std::string default_partition_line() {
    // slurmrestd v0.0.40+ does not say which partition is the default: a user says it.
    return testbed_is_24() ? "    default_partition: " + slurm_env().at("SLURM_DEFAULT_PARTITION") + "\n"
                           : std::string();
}

bool slurm_accounting() {
    const auto& env = slurm_env();
    const auto it = env.find("SLURM_ACCOUNTING");
    return it != env.end() && it->second == "1";
}

std::string slurm_rest_api() {
    const char* pinned = std::getenv("TANDEM_TEST_SLURM_API");
    if (pinned && *pinned) {
        return pinned;
    }
    return slurm_env().at("SLURM_REST_API");
}

RunResult slurm_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    std::vector<std::string> full;
    if (testbed_is_24()) {
        full = {testbed_script(), "run"};
        full.insert(full.end(), argv.begin(), argv.end());
    } else {
        full = argv;
        full[0] = "/usr/bin/" + full[0];
    }
    return run(full, RunOptions{{}, "", timeout, "", {}});
}

const std::map<std::string, std::string>& slurm_env() {
    static const std::map<std::string, std::string> env = [] {
        std::map<std::string, std::string> out;
        auto r = run({testbed_script(), "env"}, RunOptions{{}, "", 30s, "", {}});
        if (r.exit_code != 0) {
            return out;
        }
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            auto eq = line.find('=');
            if (eq == std::string::npos) {
                continue;
            }
            std::string value = line.substr(eq + 1);
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
                value = value.substr(1, value.size() - 2);
            }
            out[line.substr(0, eq)] = value;
        }
        return out;
    }();
    INFO("the Slurm testbed is not running: start it with `" << testbed_script()
                                                             << " up` (scripts/test and .ci/run do)");
    REQUIRE(env.count("SLURM_REST_URL") == 1);
    return env;
}

void testbed(const std::vector<std::string>& args) {
    std::vector<std::string> argv{testbed_script()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv, RunOptions{{}, "", 120s, "", {}});
    INFO(r);
    REQUIRE(r.exit_code == 0);
}

SlurmHome::SlurmHome(const std::string& token, const std::string& url) {
    const auto& env = slurm_env();
    home.write_config("clusters:\n"
                      "  - name: lab\n"
                      "    type: slurm\n"
                      "    discover_jobs: false\n"
                      "    rest:\n"
                      "      url: " +
                      (url.empty() ? env.at("SLURM_REST_URL") : url) +
                      "\n"
                      "      user: " +
                      env.at("SLURM_JWT_USER") +
                      "\n"
                      "      token_env: SLURM_JWT\n" +
                      rest_api_pin_line() + default_partition_line() +
                      "    home: " + env.at("SLURM_USER_HOME") + "\n");
    options.env = home.base_env();
    options.env["SLURM_JWT"] = token.empty() ? env.at("SLURM_JWT") : token;
}

RunResult SlurmHome::tandem(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const {
    RunOptions o = options;
    o.timeout = timeout;
    return home.tandem(args, o);
}

nlohmann::json SlurmHome::job(int id) const {
    auto r = tandem({"status", std::to_string(id), "--json"});
    INFO(r);
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["jobs"].size() == 1);
    return j["jobs"][0];
}

nlohmann::json SlurmHome::wait_terminal(int id, std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < deadline) {
        j = job(id);
        if (is_terminal_state(j["state"].get<std::string>())) {
            return j;
        }
        std::this_thread::sleep_for(500ms);
    }
    return j;
}

std::string SlurmHome::task(const std::string& name, const std::string& yaml) const {
    return home.write(name + ".yaml", yaml);
}

} // namespace tandem_test
