#include "slurm_testbed.hpp"

#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

namespace tandem_test {

std::string testbed_script() {
    return std::string(TANDEM_SOURCE_DIR) + "/scripts/testbed/slurm";
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
                      "    rest:\n"
                      "      url: " +
                      (url.empty() ? env.at("SLURM_REST_URL") : url) +
                      "\n"
                      "      user: " +
                      env.at("SLURM_JWT_USER") +
                      "\n"
                      "      token_env: SLURM_JWT\n"
                      "    home: " +
                      env.at("SLURM_USER_HOME") + "\n");
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
