#pragma once
// The job store: one SQLite file in WAL mode with a busy timeout, shared safely by concurrent tandem
// processes. A schema_version table records the layout; migrations only add, never drop, and a database
// written by a newer tandem is refused rather than touched.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/job.hpp"

struct sqlite3;

namespace tandem::store {

class Stmt;     // sqlite_stmt.hpp, private to the store
class WriteTxn; // sqlite_stmt.hpp

inline constexpr int k_schema_version = 8;

struct JobFilter {
    bool active_only = false;                // only non-terminal jobs
    std::optional<std::int64_t> ended_after; // with active_only=false: also terminal jobs ended after this
    std::vector<std::int64_t> ids;           // empty: all
    std::optional<std::string> cluster;
    std::optional<std::string> name;
    std::optional<JobState> state;
    bool top_level_only = false;             // no members of groups (their group row stands for them)
    std::vector<std::int64_t> parent_ids;    // non-empty: only members of these groups
};

using JobUpdate = tandem::JobUpdate; // defined in core/job.hpp

// One earlier placement of a job that moved on (failover): refused at submit, or cancelled after waiting
// too long. The job's current placement is the jobs row itself.
struct Attempt {
    int number = 0; // 1, 2, ... in order
    std::string cluster;
    std::string backend;
    std::string pool;
    std::string remote_id; // empty when the submit was refused
    std::int64_t submitted_at = 0;
    std::int64_t ended_at = 0;
    std::string outcome; // "refused: ...", "pending 5m (Resources): cancelled"
};

// Where a job goes next (failover).
struct Move {
    std::string cluster;
    std::string backend;
    std::string placement_json;
    std::string gpus;
    std::string reason; // shown while the new submit is under way
    std::string submit_token; // the token of the next submit
};

// A service (`tandem serve up`): which cluster and namespace hold it. The cluster holds its state
// (Deployment, Service, HPA); the store remembers only where to ask, and the spec it was last given.
struct ServiceRecord {
    std::string name;           // unique among this store's services (a DNS-1123 label)
    std::string cluster;        // configured cluster name ("lab", "k8s/prod")
    std::string backend;        // "kubernetes"
    std::string namespace_name;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    int version = 1;            // 1 at `serve up`, +1 at each `serve update`
    std::string spec_json;      // to_redacted_json of the task (no secret values)
};

// One connection. Not for sharing between threads without a lock: each thread or process opens its own,
// and SQLite's file locking (with the busy timeout) keeps them consistent.
class JobStore {
public:
    // Opens (creating if needed) the database at `path` and brings its schema up to date.
    static Result<std::unique_ptr<JobStore>> open(const std::string& path);
    ~JobStore();
    JobStore(const JobStore&) = delete;
    JobStore& operator=(const JobStore&) = delete;

    // Inserts a new job and returns the id assigned here (job.id is ignored). Callers insert in PENDING with
    // no remote id yet, before submitting; every other field is stored as given. UNKNOWN is refused.
    Result<std::int64_t> insert(const JobRecord& job);
    // Records the backend's id once the submit succeeded (or once `status` found the job a killed launch
    // submitted). True while the job is still active; false when it ended meanwhile (cancelled while it was
    // being submitted): the id is stored all the same, and the caller cancels the remote job.
    Result<bool> set_remote_id(std::int64_t id, const std::string& remote_id);
    // Replaces the stored placement (a job group keeps what it has done there: addresses published).
    Status set_placement_json(std::int64_t id, const std::string& placement_json);
    // Applies a refresh result and sets updated_at to `now`. An UNKNOWN result changes nothing: the row keeps
    // its last known state, and updated_at its age. A result that only repeats what the row says, confirmed
    // less than 5 s before `now`, is not written (updated_at stays: the age is at most that much older).
    Status update(std::int64_t id, const JobUpdate& update, std::int64_t now);
    // Applies a whole refresh in one transaction; says, per entry, whether the row changed (false: the
    // update was UNKNOWN, the job had already ended, or it does not exist).
    // With `remote_ids` (one per update), an update lands only while its job still holds that remote id:
    // a failover may have moved the job while the refresh was under way.
    Result<std::vector<bool>> update_many(const std::vector<std::pair<std::int64_t, JobUpdate>>& updates,
                                          std::int64_t now, const std::vector<std::string>& remote_ids = {});
    Result<std::optional<JobRecord>> get(std::int64_t id);

    // Jobs found on the clusters (issue 31), in one transaction: each job whose submit token the store
    // does not hold, nor its cluster and remote id (now, or in an earlier attempt of a job that moved),
    // is inserted as given. A member (`group_token` set) joins the group row holding that token, which is
    // inserted from `group` when no row holds it. Returns, per entry, the new row's id, or 0 when the
    // store held the job already (another `status` may have adopted it a moment before).
    struct Found {
        JobRecord job;
        std::string group_token;
        JobRecord group; // the row to make when no row holds group_token
    };
    Result<std::vector<std::int64_t>> adopt(const std::vector<Found>& found);

    // Failover, in one transaction: records `finished` as the job's next earlier attempt and points the
    // job at `to`, PENDING with no remote id. Only while the job still holds `expected_remote_id` and has
    // not ended, except that a CANCELLED not asked for by the user (the failover's own cancel, seen by a
    // concurrent refresh) does not stop it. Returns false when the job was not moved.
    Result<bool> move_job(std::int64_t id, const std::string& expected_remote_id, const Attempt& finished,
                          const Move& to, std::int64_t now);
    // The earlier attempts of a job, oldest first (empty for a job that never moved).
    Result<std::vector<Attempt>> attempts(std::int64_t id);
    Result<std::vector<JobRecord>> list(const JobFilter& filter); // sorted by id

    // Services. insert_service returns false (and changes nothing) when the name is taken.
    Result<bool> insert_service(const ServiceRecord& service);
    Result<std::optional<ServiceRecord>> get_service(const std::string& name);
    Result<std::vector<ServiceRecord>> list_services(); // sorted by name
    // `serve update`: the new version and spec (only while the row's version is `expected_version`;
    // false when it is not, or the service is gone).
    Result<bool> update_service(const std::string& name, int expected_version, int version,
                                const std::string& spec_json, std::int64_t now);
    // `serve up`, once the cluster has said which namespace holds it; false when the service is gone.
    Result<bool> set_service_namespace(const std::string& name, const std::string& namespace_name);
    // `serve down`: false when there was no such service.
    Result<bool> remove_service(const std::string& name);

private:
    JobStore(sqlite3* db, std::string path);
    Status configure();
    Result<int> stored_version();
    Status set_wal_mode();
    Status migrate();
    Status exec(const char* sql, std::string_view what);
    Result<Stmt> prepare(std::string_view sql);
    Result<WriteTxn> begin_write();
    Result<std::int64_t> insert_row(const JobRecord& job); // inside the caller's transaction
    Error sqlite_error(std::string_view what) const;
    Status not_found(std::int64_t id) const;

    sqlite3* m_db;
    std::string m_path;
};

} // namespace tandem::store
