// Issue 19, "a backend that misbehaves": the real binary against a slurmrestd and a Kubernetes API server
// that accept the connection and then behave badly (fault_server.hpp). Each scenario first records a
// RUNNING job through a healthy exchange, then turns the server bad and checks that tandem stays within
// its deadline (README: a cluster's deadline is 2 x timeout_seconds + 5 s), says what went wrong in one
// `tandem: error:` line naming the cluster, shows the job UNKNOWN with its last known state and age, never
// sends a submit twice into a duplicate, and loses nothing in the job store.
//
// Both fakes speak plain HTTP on 127.0.0.1. Slurm goes through tandem's own HTTP/1.1 exchange
// (net/plain_http.cpp); the Kubernetes server URL carries user info (`http://tandem@127.0.0.1:PORT`), which
// sends it through libcurl (net/curl_exchange.cpp), so both transports are exercised.

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fake_clusters.hpp"
#include "fault_server.hpp"
#include "run_tandem.hpp"

using namespace tandem_test;
using json = nlohmann::json;

namespace {

// Exactly one `tandem: error:` line, naming the cluster and saying each of `mentions`.
void check_one_error_line(const RunResult& r, const std::string& cluster,
                          const std::vector<std::string>& mentions) {
    const auto errors = r.err_lines_starting("tandem: error:");
    INFO(r);
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], cluster));
    for (const auto& m : mentions) {
        INFO("mention: " << m);
        CHECK(contains(errors[0], m));
    }
}

struct StatusSeen {
    RunResult run;                      // `status ID --json`
    std::vector<FaultRequest> requests; // what that one command sent
    std::string reason;
};

// `status` while the server misbehaves: within the deadline, exit 0, the job UNKNOWN with its last known
// state and age, the reason one line naming the cluster and saying each of `mentions`.
StatusSeen check_status_unknown(Rig& rig, int id, const std::vector<std::string>& mentions) {
    StatusSeen seen;
    rig.server().clear_requests();
    seen.run = rig.tandem({"status", std::to_string(id), "--json"});
    seen.requests = rig.server().requests();
    INFO(seen.run << "\n--- requests ---\n" << rig.server().transcript());
    CHECK(seen.run.exited());
    CHECK(seen.run.exit_code == 0);
    CHECK(seen.run.elapsed < rig.deadline());
    const json j = json::parse(seen.run.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j["jobs"].size() == 1);
    const json& job = j["jobs"][0];
    CHECK(job["state"] == "UNKNOWN");
    CHECK(job["last_known_state"] == "RUNNING");
    CHECK(job["state_age_seconds"].get<std::int64_t>() >= 0);
    seen.reason = job.value("reason", "");
    CHECK(contains(seen.reason, rig.cluster));
    for (const auto& m : mentions) {
        INFO("mention: " << m);
        CHECK(contains(seen.reason, m));
    }
    CHECK(seen.reason.find('\n') == std::string::npos);
    return seen;
}

// The table says the same: "UNKNOWN (was RUNNING <age> ago)".
void check_status_table(Rig& rig) {
    auto table = rig.tandem({"status"});
    INFO(table);
    CHECK(table.exit_code == 0);
    CHECK(table.elapsed < rig.deadline());
    CHECK(contains(table.out, "UNKNOWN (was RUNNING"));
    CHECK(contains(table.out, " ago)"));
}

std::size_t count_if(const std::vector<FaultRequest>& requests,
                     const std::function<bool(const FaultRequest&)>& which) {
    return static_cast<std::size_t>(std::count_if(requests.begin(), requests.end(), which));
}

std::vector<std::chrono::milliseconds> gaps_between(const std::vector<FaultRequest>& requests,
                                                    const std::function<bool(const FaultRequest&)>& which) {
    std::vector<std::chrono::milliseconds> out;
    std::optional<std::chrono::steady_clock::time_point> last;
    for (const auto& r : requests) {
        if (!which(r)) {
            continue;
        }
        if (last) {
            out.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(r.at - *last));
        }
        last = r.at;
    }
    return out;
}

// A launch that failed left its job in the store and nothing else moved: FAILED with the submit's error,
// or, when the submit failed in transit (the cluster may have taken it), PENDING "submit outcome unknown"
// until a `status` against the healed server asks for its token and finds nothing: then FAILED.
void check_failed_launch_recorded(Rig& rig, const Store& before) {
    const Store after = rig.store();
    REQUIRE(after.size() == before.size() + 1);
    const auto& [id, row] = *after.rbegin();
    INFO("job " << id);
    CHECK(before.count(id) == 0);
    if (row.first == "PENDING") {
        CHECK(rig.job_json(id, false).value("reason", "").rfind("submit outcome unknown:", 0) == 0);
        rig.heal();
        const auto settled = rig.job_json(id, true);
        CHECK(settled.value("state", "") == "FAILED");
        CHECK(settled.value("reason", "").rfind("submit failed: " + rig.cluster + " did not take the job", 0) == 0);
        return;
    }
    CHECK(row.first == "FAILED");
    CHECK(rig.job_json(id, false).value("reason", "").rfind("submit failed", 0) == 0);
}

// A launch sent its submit so that it cannot make two jobs: Slurm looks for the submit's token between two
// POSTs; a Kubernetes Job has one fixed name in every POST (a second create is a 409, resolved by token).
// And the server holds at most one more job than before.
void check_no_duplicate(Rig& rig, std::size_t remote_jobs_before) {
    const auto requests = rig.server().requests();
    INFO("--- requests ---\n" << rig.server().transcript());
    CHECK(rig.remote_jobs() <= remote_jobs_before + 1);
    if (rig.backend() == Backend::slurm) {
        bool submitted = false, looked = false;
        for (const auto& r : requests) {
            if (rig.is_submit(r)) {
                CHECK((!submitted || looked));
                submitted = true;
                looked = false;
            } else if (r.method == "GET" && r.path() == rig.list_path) {
                looked = true;
            }
        }
    } else {
        std::set<std::string> names;
        for (const auto& r : requests) {
            if (rig.is_submit(r)) {
                names.insert(json::parse(r.body)["metadata"].value("name", ""));
            }
        }
        CHECK(names.size() <= 1);
    }
}

// After the server is healthy again: every job is still there with its remote id, and the first RUNNING.
void check_nothing_lost(Rig& rig, int id, const Store& before) {
    rig.heal();
    const Store after = rig.store();
    for (const auto& [job_id, row] : before) {
        INFO("job " << job_id);
        REQUIRE(after.count(job_id) == 1);
        CHECK(after.at(job_id).second == row.second);
    }
    CHECK(rig.job_json(id, true)["state"] == "RUNNING");
}

// A launch that found the job its submit made, although the answer to the submit was lost.
void check_launch_found_its_job(Rig& rig, const RunResult& launched, std::size_t remote_jobs_before) {
    INFO(launched << "\n--- requests ---\n" << rig.server().transcript());
    REQUIRE(launched.exit_code == 0);
    CHECK(rig.remote_jobs() == remote_jobs_before + 1);
    CHECK(count_if(rig.server().requests(), [&](const FaultRequest& r) { return rig.is_submit(r); }) <=
          (rig.backend() == Backend::slurm ? 1u : 3u));
    const json job = rig.job_json(std::stoi(launched.out), true);
    CHECK(job["state"] == "RUNNING");
    CHECK_FALSE(job.value("remote_id", "").empty());
}

// --- Scenario 1: the connection is accepted and nothing ever comes back ---

void never_answers(Backend backend) {
    Rig rig(backend, 3); // deadline 2 * 3 + 5 = 11 s; one request's budget 6 s
    const int id = rig.launch_running();
    const Store before = rig.store();
    const std::size_t remote_before = rig.remote_jobs();

    rig.misbehave([](FaultConnection& c, const FaultRequest&) { never_answer(c); });
    const auto seen = check_status_unknown(rig, id, {"did not answer"});
    // One request's attempts share a budget of twice its timeout; 1.5 s for the process around it.
    CHECK(seen.run.elapsed < 2 * rig.timeout() + 1500ms);
    CHECK(count_if(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); }) <= 2);
    check_status_table(rig);

    rig.server().clear_requests();
    auto launched = rig.tandem({"launch", "-d", rig.task});
    INFO(launched << "\n--- requests ---\n" << rig.server().transcript());
    CHECK(launched.exited());
    CHECK(launched.exit_code == 5);
    CHECK(launched.elapsed < rig.deadline());
    check_one_error_line(launched, rig.cluster, {"did not answer"});
    check_no_duplicate(rig, remote_before);
    check_failed_launch_recorded(rig, before);

    check_nothing_lost(rig, id, before);
}

// --- Scenario 2: 500, 502, 503, 429, with and without Retry-After ---

void answers_with(Backend backend, int code) {
    Rig rig(backend);
    const int id = rig.launch_running();
    const Store before = rig.store();
    const std::size_t remote_before = rig.remote_jobs();
    // slurmrestd reports its own errors as 500 with errors[]: tandem reads that answer, never retries it.
    const bool read_not_retried = backend == Backend::slurm && code == 500;
    const bool throttling = code == 429 || code == 503; // the statuses whose Retry-After counts
    const std::string said = "HTTP " + std::to_string(code);

    for (const std::string retry_after : {"", "1", "100000"}) {
        INFO("HTTP " << code << ", Retry-After '" << retry_after << "'");
        FaultHeaders headers;
        if (!retry_after.empty()) {
            headers.emplace_back("Retry-After", retry_after);
        }
        rig.misbehave([code, headers](FaultConnection& c, const FaultRequest&) {
            reply(c, code, "upstream trouble", headers, "text/plain");
        });

        const auto seen = check_status_unknown(rig, id, {said});
        INFO(seen.run);
        const auto lists = count_if(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); });
        if (read_not_retried || (throttling && retry_after == "100000")) {
            CHECK(lists == 1);
        } else {
            CHECK(lists == 3); // idempotent: retried, a bounded number of times
        }
        if (throttling && retry_after == "1") {
            for (auto gap :
                 gaps_between(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); })) {
                CHECK(gap >= 900ms); // the server's wait was honoured
            }
        }
        if (throttling && retry_after == "100000") {
            CHECK(contains(seen.reason, "retry after 100000 s"));
            CHECK(seen.run.elapsed < rig.timeout()); // gave up at once: no day-long sleep
        }
        if (retry_after.empty()) {
            check_status_table(rig);
        }

        const Store prior = rig.store();
        rig.server().clear_requests();
        auto launched = rig.tandem({"launch", "-d", rig.task});
        INFO(launched << "\n--- requests ---\n" << rig.server().transcript());
        CHECK(launched.exited());
        CHECK(launched.exit_code == (read_not_retried ? 1 : 5));
        CHECK(launched.elapsed < rig.deadline());
        check_one_error_line(launched, rig.cluster, {said});
        check_no_duplicate(rig, remote_before);
        CHECK(rig.remote_jobs() == remote_before);
        if (backend == Backend::slurm) { // the lookup failed as well: the submit is not sent again
            CHECK(count_if(rig.server().requests(),
                           [&](const FaultRequest& r) { return rig.is_submit(r); }) == 1);
        }
        check_failed_launch_recorded(rig, prior);
    }
    check_nothing_lost(rig, id, before);
}

// --- Scenario 3: the connection closes in the middle of the body ---

void cuts_the_body(Backend backend) {
    Rig rig(backend);
    const int id = rig.launch_running();
    const Store before = rig.store();
    const std::size_t remote_before = rig.remote_jobs();

    rig.misbehave([&rig](const FaultRequest& r) { return rig.is_list(r); },
                  [&rig](FaultConnection& c, const FaultRequest&) {
                      const std::string body = rig.list_answer();
                      cut_body(c, 200, body.substr(0, body.size() / 2), body.size() + 1000);
                  });
    const auto seen = check_status_unknown(rig, id, {"broke during GET"});
    CHECK(count_if(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); }) == 3);
    check_status_table(rig);

    // The server takes the submit, then the connection drops half-way through the answer (once).
    auto cuts = std::make_shared<std::atomic<int>>(0);
    rig.misbehave([&rig](const FaultRequest& r) { return rig.is_submit(r); },
                  [&rig, cuts](FaultConnection& c, const FaultRequest& r) {
                      const auto [status, body] = rig.take_submit(r);
                      if (cuts->fetch_add(1) == 0) {
                          cut_body(c, status, body.substr(0, body.size() / 2), body.size());
                      } else {
                          reply(c, status, body);
                      }
                  });
    rig.server().clear_requests();
    const auto launched = rig.tandem({"launch", "-d", rig.task});
    check_launch_found_its_job(rig, launched, remote_before);
    check_no_duplicate(rig, remote_before);
    check_nothing_lost(rig, id, before);
}

// --- Scenario 4: a truncated JSON body, and an oversized one ---

void truncated_json(Backend backend) {
    Rig rig(backend);
    const int id = rig.launch_running();
    const Store before = rig.store();
    const std::size_t remote_before = rig.remote_jobs();

    // A complete HTTP answer whose JSON stops in the middle of a value.
    rig.misbehave([&rig](const FaultRequest& r) { return rig.is_list(r); },
                  [&rig](FaultConnection& c, const FaultRequest&) {
                      const std::string body = rig.list_answer();
                      reply(c, 200, body.substr(0, body.size() - 20));
                  });
    const auto seen = check_status_unknown(rig, id, {});
    CHECK(count_if(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); }) == 1);
    CHECK((contains(seen.reason, "JSON") || contains(seen.reason, "cannot read")));
    check_status_table(rig);

    // The server takes the submit and answers it with truncated JSON: the job exists, its id is unreadable.
    rig.misbehave([&rig](const FaultRequest& r) { return rig.is_submit(r); },
                  [&rig](FaultConnection& c, const FaultRequest& r) {
                      const auto [status, body] = rig.take_submit(r);
                      reply(c, status, body.substr(0, body.size() / 2));
                  });
    rig.server().clear_requests();
    const auto launched = rig.tandem({"launch", "-d", rig.task});
    check_launch_found_its_job(rig, launched, remote_before);
    check_no_duplicate(rig, remote_before);
    check_nothing_lost(rig, id, before);
}

void oversized_body(Backend backend) {
    Rig rig(backend);
    const int id = rig.launch_running();
    const Store before = rig.store();
    constexpr std::uint64_t k_body = std::uint64_t{200} * 1000 * 1000; // 200 MB

    for (const bool announced : {true, false}) {
        INFO((announced ? "with" : "without") << " Content-Length");
        auto sent = std::make_shared<std::atomic<std::uint64_t>>(0);
        rig.misbehave([&rig](const FaultRequest& r) { return rig.is_list(r); },
                      [&rig, sent, announced](FaultConnection& c, const FaultRequest&) {
                          *sent += huge_body(c, k_body, rig.list_key(), announced);
                      });
        const auto seen = check_status_unknown(rig, id, {"over the 128 MiB tandem reads"});
        INFO("server sent " << sent->load() << " bytes; tandem's peak RSS " << seen.run.max_rss_kb << " KiB");
        CHECK(count_if(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); }) == 1);
        CHECK(seen.run.max_rss_kb > 0);
        // Announced: refused before reading it. Not announced: read up to the cap (128 MiB), no further.
        // Without a length the reader keeps at most the 128 MiB cap, but its growing buffer may be copied
        // once near the top (old and new both live): at most twice the cap plus the process, 272 MiB.
        // Measured 147 to 277 MB peak depending on chunk sizes; 2.16 GB before the cap.
        CHECK(seen.run.max_rss_kb < (announced ? 64 : 320) * 1024);
        CHECK(sent->load() < k_body);
    }
    check_status_table(rig);
    check_nothing_lost(rig, id, before);
}

// --- Scenario 5: a slowloris answer, one byte every 250 ms ---

void drips(Backend backend) {
    Rig rig(backend);
    const int id = rig.launch_running();
    const Store before = rig.store();
    const std::size_t remote_before = rig.remote_jobs();

    rig.misbehave(
        [&rig](const FaultRequest& r) { return rig.is_list(r); },
        [&rig](FaultConnection& c, const FaultRequest&) {
            slowloris(c, answer_bytes(200, rig.list_answer(), {{"Content-Type", "application/json"}}), 250ms);
        });
    const auto seen = check_status_unknown(rig, id, {"did not answer"});
    CHECK(seen.run.elapsed < 2 * rig.timeout() + 1500ms);
    CHECK(count_if(seen.requests, [&](const FaultRequest& r) { return rig.is_list(r); }) <= 2);
    check_status_table(rig);

    // The server takes the submit, then answers it one byte at a time.
    rig.misbehave([&rig](const FaultRequest& r) { return rig.is_submit(r); },
                  [&rig](FaultConnection& c, const FaultRequest& r) {
                      const auto [status, body] = rig.take_submit(r);
                      slowloris(c, answer_bytes(status, body, {{"Content-Type", "application/json"}}), 250ms);
                  });
    rig.server().clear_requests();
    const auto launched = rig.tandem({"launch", "-d", rig.task});
    CHECK(launched.elapsed < rig.deadline());
    check_launch_found_its_job(rig, launched, remote_before);
    check_no_duplicate(rig, remote_before);
    check_nothing_lost(rig, id, before);
}

} // namespace

TEST_CASE("backend faults: slurmrestd accepts the connection and never answers") {
    never_answers(Backend::slurm);
}
TEST_CASE("backend faults: the Kubernetes API server accepts the connection and never answers") {
    never_answers(Backend::k8s);
}

TEST_CASE("backend faults: slurmrestd answers 500, with and without Retry-After") {
    answers_with(Backend::slurm, 500);
}
TEST_CASE("backend faults: slurmrestd answers 502, with and without Retry-After") {
    answers_with(Backend::slurm, 502);
}
TEST_CASE("backend faults: slurmrestd answers 503, with and without Retry-After") {
    answers_with(Backend::slurm, 503);
}
TEST_CASE("backend faults: slurmrestd answers 429, with and without Retry-After") {
    answers_with(Backend::slurm, 429);
}
TEST_CASE("backend faults: the Kubernetes API server answers 500, with and without Retry-After") {
    answers_with(Backend::k8s, 500);
}
TEST_CASE("backend faults: the Kubernetes API server answers 502, with and without Retry-After") {
    answers_with(Backend::k8s, 502);
}
TEST_CASE("backend faults: the Kubernetes API server answers 503, with and without Retry-After") {
    answers_with(Backend::k8s, 503);
}
TEST_CASE("backend faults: the Kubernetes API server answers 429, with and without Retry-After") {
    answers_with(Backend::k8s, 429);
}

TEST_CASE("backend faults: slurmrestd closes the connection in the middle of the body") {
    cuts_the_body(Backend::slurm);
}
TEST_CASE("backend faults: the Kubernetes API server closes the connection in the middle of the body") {
    cuts_the_body(Backend::k8s);
}

TEST_CASE("backend faults: slurmrestd sends truncated JSON") {
    truncated_json(Backend::slurm);
}
TEST_CASE("backend faults: the Kubernetes API server sends truncated JSON") {
    truncated_json(Backend::k8s);
}

TEST_CASE("backend faults: slurmrestd sends a 200 MB body") {
    oversized_body(Backend::slurm);
}
TEST_CASE("backend faults: the Kubernetes API server sends a 200 MB body") {
    oversized_body(Backend::k8s);
}

TEST_CASE("backend faults: slurmrestd answers one byte every 250 ms") {
    drips(Backend::slurm);
}
TEST_CASE("backend faults: the Kubernetes API server answers one byte every 250 ms") {
    drips(Backend::k8s);
}
