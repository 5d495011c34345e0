#pragma once
// A scripted backend for the engine's unit tests (src/app), made through the session's backend factory
// seam (the seam the registry fills in production), and a session over a temporary state folder with a
// real SQLite store, a clock the test moves, counted tokens and the events kept for the test to read.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/session.hpp"

namespace tandem::testing {

// One fake cluster's state, shared by every backend instance made for it (a session may abandon one and
// make another) and read by the test.
struct FakeCluster {
    BackendKind kind = BackendKind::slurm;
    // Scripted submit answers, first first; when empty, a submit is taken as job "<n>".
    std::deque<Result<std::string>> submit_answers;
    // The cluster takes the job but the answer is lost in transit (a timeout after the submit).
    bool lose_answer = false;
    // Runs inside submit(), after the cluster took the job (a race: something happens meanwhile).
    std::function<void()> during_submit;
    std::map<std::string, JobUpdate> states;               // remote id -> what refresh() says
    std::map<std::string, std::string> by_token;           // submit token -> remote id (find_submitted)
    std::vector<std::string> submitted;                    // remote ids, in order
    std::vector<std::string> cancelled;                    // remote ids, in order
    std::optional<Error> cancel_error;                     // cancel() fails with this
    std::optional<Error> refresh_error;                    // refresh() fails with this
    std::map<std::string, std::vector<std::string>> hosts; // remote id -> its ranks' addresses
    std::map<std::string, std::string> published;          // channel -> book
    std::vector<std::string> unpublished;                  // channels
    int next_id = 100;
    int refreshes = 0;
    std::vector<JobIdentity> identities; // what each submit was handed, in order
    // Discovery: offered when set; what the cluster lists (callers: the cluster says they are the
    // caller's), and who the caller is there.
    bool discovery = false;
    std::vector<FoundJob> listed;
    std::string me = "me";
    int discoveries = 0;
};

struct FakeWorld {
    std::map<std::string, std::shared_ptr<FakeCluster>> clusters;
    std::int64_t now = 1'000'000;
    int tokens = 0;
    std::vector<app::Event> events;

    FakeCluster& cluster(const std::string& name) { return *clusters.at(name); }
    // Whether some event's text contains `text`.
    bool said(const std::string& text) const;
};

// A temporary state folder, removed at the end.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
};

// A session whose config lists `world`'s clusters (each a pool "p" of 4 nodes with 8 CPUs, 64 GB and 8
// H100s) and whose seams are the world's.
app::Session fake_session(FakeWorld& world, const TempDir& dir);

// What a refresh says of a job.
JobUpdate fake_update(JobState state, std::string reason = {}, std::optional<int> exit_code = {});

// A one-node task that runs `true`.
TaskSpec fake_task(const std::string& name);

// The pool every fake cluster offers, as the planner places on it.
Placement fake_placement(const std::string& cluster);

} // namespace tandem::testing
