// The SkyPilot compatibility corpus (tests/fixtures/skypilot/*.yaml, see its README): each task file,
// written from SkyPilot's documented forms, is loaded, checked against the backend kinds and planned
// against recorded inventories of the two testbeds, and must do what its `# expect` lines say.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>

#include "backends/k8s/node_inventory.hpp"
#include "backends/slurm/slurm_cli.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "core/planner.hpp"
#include "core/skypilot_keys.hpp"
#include "core/spec_loader.hpp"
#include "core/task_group.hpp"
#include "sys/files.hpp"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

const std::string k_fixtures = TANDEM_FIXTURES;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    INFO(path.string());
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Inventory recorded_inventory() {
    Inventory inv;
    auto view = slurm::cli::parse_sinfo(read_text(k_fixtures + "/slurm-cli/sinfo-22.05.txt"));
    REQUIRE(view);
    inv.clusters.push_back(slurm::build_inventory("lab", view->partitions, view->nodes));
    inv.clusters.push_back(k8s::pools_from(
        "k8s/testbed", nlohmann::json::parse(read_text(k_fixtures + "/k8s/recorded-v1.20/nodes.json")),
        nlohmann::json::parse(read_text(k_fixtures + "/k8s/recorded-v1.20/pods_all_namespaces.json"))));
    return inv;
}

struct Expectation {
    std::string placed; // CLUSTER/POOL; empty with refused
    bool refused = false;
    std::vector<std::string> errors, ignored, rejected;
};

Expectation expectation_of(const std::string& text) {
    Expectation e;
    std::istringstream lines(text);
    auto after = [](const std::string& line, const std::string& prefix) -> std::optional<std::string> {
        if (line.rfind(prefix, 0) != 0) {
            return std::nullopt;
        }
        return line.substr(prefix.size());
    };
    for (std::string line; std::getline(lines, line);) {
        if (auto v = after(line, "# expect: placed ")) {
            e.placed = *v;
        } else if (line == "# expect: refused") {
            e.refused = true;
        } else if (auto err = after(line, "# expect-error: ")) {
            e.errors.push_back(*err);
        } else if (auto ign = after(line, "# expect-ignored: ")) {
            e.ignored.push_back(*ign);
        } else if (auto rej = after(line, "# expect-rejected: ")) {
            e.rejected.push_back(*rej);
        }
    }
    return e;
}

std::vector<fs::path> corpus() {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(k_fixtures + "/skypilot")) {
        if (entry.path().extension() == ".yaml") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& needle) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

} // namespace

TEST_CASE("every file of the SkyPilot corpus is planned, or refused with SkyPilot's reason") {
    const Inventory inventory = recorded_inventory();
    const auto files = corpus();
    REQUIRE(files.size() >= 30);
    for (const auto& file : files) {
        const std::string text = read_text(file);
        const Expectation want = expectation_of(text);
        INFO(file.filename().string());
        CHECK(want.refused == want.placed.empty()); // exactly one of placed / refused
        if (want.refused != want.placed.empty()) {
            continue;
        }

        LoadOptions options;

        options.files = tandem::sys::real_files();
        options.base_dir = file.parent_path().string();
        options.getenv = [](const std::string&) { return std::nullopt; };
        auto loaded = load_spec(text, file.filename().string(), {}, options);
        std::vector<std::string> errors;
        for (const auto& d : loaded.diagnostics) {
            errors.push_back(format_diagnostic(d));
        }
        Plan plan;
        if (loaded.spec) {
            for (const auto& d :
                 check_backend_support(*loaded.spec, {BackendKind::slurm, BackendKind::kubernetes})) {
                errors.push_back(format_diagnostic(d));
            }
            plan = tandem::plan(*loaded.spec, inventory);
        }
        std::vector<std::string> rejected;
        for (const auto& r : plan.rejections) {
            rejected.push_back(r.cluster + "/" + r.pool + " " + r.option_label + ": " + r.reason);
        }
        if (loaded.spec && plan.placements.empty()) { // what `launch` then prints, one line per rejection
            errors.insert(errors.end(), rejected.begin(), rejected.end());
        }
        std::vector<std::string> ignored;
        if (loaded.spec) {
            for (const auto& n : loaded.spec->notes) {
                ignored.push_back(n.field + ": " + n.note);
            }
        }
        if (!plan.placements.empty()) {
            const auto& best = plan.placements.front();
            ignored.insert(ignored.end(), best.ignored.begin(), best.ignored.end());
        }
        INFO("errors:\n" << format_diagnostics(loaded.diagnostics));
        for (const auto& e : errors) {
            UNSCOPED_INFO(e);
        }
        for (const auto& r : rejected) {
            UNSCOPED_INFO("rejected " << r);
        }
        for (const auto& i : ignored) {
            UNSCOPED_INFO("ignored " << i);
        }
        if (want.refused) {
            CHECK((!errors.empty() || plan.placements.empty()));
        } else {
            CHECK(errors.empty());
            REQUIRE_FALSE(plan.placements.empty());
            const auto& best = plan.placements.front();
            CHECK(best.cluster + "/" + best.pool == want.placed);
        }
        for (const auto& e : want.errors) {
            INFO("expected an error containing: " << e);
            CHECK(any_contains(errors, e));
        }
        for (const auto& i : want.ignored) {
            INFO("expected an ignored field containing: " << i);
            CHECK(any_contains(ignored, i));
        }
        for (const auto& r : want.rejected) {
            INFO("expected a rejection containing: " << r);
            CHECK(any_contains(rejected, r));
        }
        // SkyPilot accepts every key of its schema: none may be "unknown" unless the file says so.
        if (!any_contains(want.errors, "unknown field")) {
            CHECK_FALSE(any_contains(errors, "unknown field"));
        }
    }
}

TEST_CASE("every key of tandem's SkyPilot key table has a case in the corpus") {
    std::string all;
    for (const auto& file : corpus()) {
        all += read_text(file);
    }
    for (const auto& key : sky_keys()) {
        const std::string written = std::string(key.key) + ":";
        INFO("no corpus file writes " << (key.section.empty() ? "" : std::string(key.section) + ".")
                                      << key.key);
        CHECK(all.find(written) != std::string::npos);
    }
}

TEST_CASE("no row of the key table repeats a key, and refused rows say why") {
    const auto& keys = sky_keys();
    for (std::size_t i = 0; i < keys.size(); ++i) {
        for (std::size_t j = i + 1; j < keys.size(); ++j) {
            INFO(keys[i].section << "." << keys[i].key);
            CHECK_FALSE((keys[i].section == keys[j].section && keys[i].key == keys[j].key));
        }
        if (keys[i].use != KeyUse::handled && keys[i].use != KeyUse::internal) {
            CHECK_FALSE(keys[i].note.empty());
        }
    }
}

TEST_CASE("every pipeline and job group of the corpus: each task placed where its expect-member says") {
    const Inventory inventory = recorded_inventory();
    int files = 0;
    for (const auto& entry : fs::directory_iterator(k_fixtures + "/skypilot/groups")) {
        if (entry.path().extension() != ".yaml") {
            continue;
        }
        ++files;
        const std::string text = read_text(entry.path());
        INFO(entry.path().filename().string());
        std::map<std::string, std::string> want; // member -> CLUSTER/POOL or "none"
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            const std::string prefix = "# expect-member: ";
            if (line.rfind(prefix, 0) == 0) {
                const auto rest = line.substr(prefix.size());
                want[rest.substr(0, rest.find(' '))] = rest.substr(rest.find(' ') + 1);
            }
        }
        LoadOptions options;
        options.files = tandem::sys::real_files();
        options.base_dir = entry.path().parent_path().string();
        options.getenv = [](const std::string&) { return std::nullopt; };
        auto loaded = load_task_text(text, entry.path().filename().string(), {}, options);
        INFO(format_diagnostics(loaded.diagnostics));
        REQUIRE(loaded.group);
        CHECK(loaded.group->members.size() == want.size());
        for (const auto& member : loaded.group->members) {
            INFO(member.name);
            CHECK(check_backend_support(member, {BackendKind::slurm, BackendKind::kubernetes}).empty());
            const auto p = plan(member, inventory);
            const std::string got = p.placements.empty()
                                        ? "none"
                                        : p.placements.front().cluster + "/" + p.placements.front().pool;
            REQUIRE(want.count(member.name) == 1);
            CHECK(got == want[member.name]);
        }
    }
    CHECK(files >= 3);
}
