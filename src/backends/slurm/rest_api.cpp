// slurmrestd mappers for every version tandem speaks: see rest_api.hpp for the facts they rest on.

#include "backends/slurm/rest_api.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "backends/slurm/hostlist.hpp"
#include "backends/slurm/job_array.hpp"
#include "backends/slurm/rest_json.hpp"
#include "backends/slurm/submit_plan.hpp"

namespace tandem::slurm::api {

namespace {

using nlohmann::json;

bool is_v38(ApiVersion version) { return version == ApiVersion::v0_0_38; }

std::string what(ApiVersion version, std::string_view body) {
    return fmt::format("{} {}", to_string(version), body);
}

std::string lower(std::string s) {
    for (auto& c : s) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

bool contains(const std::vector<std::string>& list, std::string_view item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

// A number as the dialect writes it: plain in v0.0.38, {set, infinite, number} from v0.0.40.
json number_field(std::int64_t n, ApiVersion version) {
    if (is_v38(version)) {
        return n;
    }
    return json{{"set", true}, {"infinite", false}, {"number", n}};
}

std::string gpu_request(const SubmitPlan& plan, ApiVersion version) {
    const char* prefix = is_v38(version) ? "gpu" : "gres/gpu"; // v0.0.38: "gres"; later: "tres_per_node"
    return plan.gres_type.empty() ? fmt::format("{}:{}", prefix, plan.gpus_per_node)
                                  : fmt::format("{}:{}:{}", prefix, plan.gres_type, plan.gpus_per_node);
}

// v0.0.38: an object of K: V; later: an array of "K=V". slurmrestd refuses a job without environment.
json environment(const SubmitPlan& plan, ApiVersion version) {
    auto pairs = plan.environment;
    if (pairs.empty()) {
        pairs.emplace_back("TANDEM_JOB_ID", std::to_string(plan.tandem_id));
    }
    json env = is_v38(version) ? json::object() : json::array();
    for (const auto& [k, v] : pairs) {
        if (is_v38(version)) {
            env[k] = v;
        } else {
            env.push_back(k + "=" + v);
        }
    }
    return env;
}

// A string or an array of strings: base state first, then flags.
void read_state(const json& state, SlurmJob& job) {
    std::vector<std::string> all;
    if (state.is_string()) {
        all.push_back(state.get<std::string>());
    } else if (state.is_array()) {
        for (const auto& s : state) {
            if (s.is_string()) {
                all.push_back(s.get<std::string>());
            }
        }
    }
    if (!all.empty()) {
        job.state = all.front();
        job.state_flags.assign(all.begin() + 1, all.end());
    }
}

// {"status": [...], "return_code": N|{...}, "signal": {"id": N|{...}, "name": "..."}}. A plain number
// is v0.0.38's raw wait status, the only flat encoding Slurm has used.
void read_exit(const json& ec, SlurmJob& job) {
    if (!ec.is_object()) {
        if (const auto raw = rest::number(ec)) {
            const auto e = rest::decode_wait_status(*raw);
            job.exit_code = e.exit_code;
            job.signal = e.signal;
        }
        return;
    }
    const auto status = rest::strings(ec, "status");
    if (contains(status, "PENDING") || contains(status, "INVALID")) {
        return;
    }
    if (contains(status, "SIGNALED") || contains(status, "CORE_DUMPED")) {
        if (const auto sig = rest::number(rest::at_path(ec, {"signal"}), "id")) {
            job.signal = static_cast<int>(*sig);
        }
    }
    if (!job.signal) {
        if (const auto rc = rest::number(ec, "return_code")) {
            job.exit_code = static_cast<int>(*rc);
        }
    }
}

// v0.0.38 accounting: only a signal is trustworthy; an exit of any code reads as SUCCESS/0 (see the header).
void read_db_exit_v38(const json& ec, SlurmJob& job) {
    if (rest::text(ec, "status") == "SIGNALED") {
        if (const auto sig = rest::number(rest::at_path(ec, {"signal"}), "signal_id")) {
            job.signal = static_cast<int>(*sig);
        }
    } else if (const auto rc = rest::number(ec, "return_code"); rc && *rc > 0) {
        job.exit_code = static_cast<int>(*rc);
    }
}

// v0.0.38: one lower-case string ("idle", "mixed") with drain as a flag on top (state_flags: ["DRAIN"]);
// later: an array of upper-case states, DRAIN among them.
std::string node_state(const json& n, ApiVersion version) {
    const auto states = rest::strings(n, "state");
    std::string base = states.empty() ? std::string() : lower(states.front());
    auto flags = is_v38(version) ? rest::strings(n, "state_flags") : states;
    flags.push_back(base);
    for (const auto& s : flags) {
        if (lower(s).rfind("drain", 0) == 0) {
            return "drain";
        }
    }
    return base;
}

void read_partition_limits(const json& p, ApiVersion version, SlurmPartition& part) {
    if (is_v38(version)) {
        // -1 (INFINITE) or absent: unlimited; null or absent default: MaxTime applies.
        if (const auto t = rest::number(p, "max_time_limit"); t && *t >= 0) {
            part.max_time_minutes = static_cast<int>(*t);
        }
        if (const auto t = rest::number(p, "default_time_limit"); t && *t >= 0) {
            part.default_time_minutes = static_cast<int>(*t);
        }
        part.state = rest::text(p, "state");
        return;
    }
    if (const auto t = rest::number(rest::at_path(p, {"maximums", "time"}))) {
        part.max_time_minutes = static_cast<int>(*t);
    }
    if (const auto t = rest::number(rest::at_path(p, {"defaults", "time"}))) {
        part.default_time_minutes = static_cast<int>(*t);
    }
    const auto states = rest::strings(rest::at_path(p, {"partition"}), "state");
    part.state = states.empty() ? std::string() : states.front();
}

} // namespace

json submit_payload(const std::string& script, const SubmitPlan& plan, ApiVersion version) {
    json job = json::object();
    if (!plan.job_name.empty()) {
        job["name"] = plan.job_name;
    }
    if (!plan.partition.empty()) {
        job["partition"] = plan.partition;
    }
    if (is_v38(version)) {
        job["nodes"] = json::array({plan.nodes, plan.nodes}); // [min, max]
    } else {
        job["minimum_nodes"] = plan.nodes;
        job["maximum_nodes"] = plan.nodes;
    }
    job["tasks"] = plan.nodes;
    job["tasks_per_node"] = 1;
    if (plan.gpus_per_node > 0) {
        job[is_v38(version) ? "gres" : "tres_per_node"] = gpu_request(plan, version);
    }
    if (plan.cpus_per_task) {
        job["cpus_per_task"] = *plan.cpus_per_task;
    }
    if (plan.memory_mb_per_node) {
        job["memory_per_node"] = number_field(*plan.memory_mb_per_node, version);
    }
    if (plan.tmp_disk_mb) { // v0.0.38: not in the schema, but in slurmrestd's option table (--tmp)
        job["temporary_disk_per_node"] = *plan.tmp_disk_mb;
    }
    if (plan.time_limit_minutes) {
        job["time_limit"] = number_field(*plan.time_limit_minutes, version);
    }
    if (plan.account) {
        job["account"] = *plan.account;
    }
    if (plan.qos) {
        job["qos"] = *plan.qos;
    }
    if (plan.constraint) {
        job["constraints"] = *plan.constraint;
    }
    if (!plan.output_pattern.empty()) {
        job["standard_output"] = plan.output_pattern;
        job["standard_error"] = plan.output_pattern;
    }
    if (plan.sweep) { // what --array=0-(N-1)%P asks over sbatch
        job["array"] = array_range(*plan.sweep);
    }
    if (plan.recovery) { // what --requeue and --open-mode=append ask over sbatch
        job["requeue"] = true;
        job["open_mode"] = is_v38(version) ? json("append") : json::array({"APPEND"});
    }
    if (!plan.submit_token.empty()) {
        job["comment"] = job_comment(plan);
    }
    if (!plan.working_directory.empty()) {
        job["current_working_directory"] = plan.working_directory;
    }
    job["environment"] = environment(plan, version);
    if (version == ApiVersion::v0_0_38 || version == ApiVersion::v0_0_40) {
        return json{{"script", script}, {"job", std::move(job)}};
    }
    job["script"] = script; // v0.0.41 deprecates the top-level script, v0.0.42 drops it
    return json{{"job", std::move(job)}};
}

Result<std::string> parse_submit_response(const json& body, ApiVersion version) {
    return rest::guarded(what(version, "submit response"), [&]() -> Result<std::string> {
        // A job id means the job exists, even if errors[] holds warnings.
        auto id = rest::number(body, "job_id");
        if (!id) { // v0.0.41 also reports {"result": {"job_id": ...}}
            id = rest::number(rest::at_path(body, {"result"}), "job_id");
        }
        if (id) {
            return std::to_string(*id);
        }
        if (auto err = rest::response_error(body)) { // slurmctld declined it: another cluster may not
            return tl::unexpected(refusal(Error{ErrorKind::remote, err->message, {}}));
        }
        return fail(ErrorKind::remote, "slurm: the submit response has neither a job_id nor errors");
    });
}

namespace {

// A job array's element (a sweep, issue 33) is a job of its own to slurmrestd, with the array's id and
// its index beside its own id; the elements not yet started are one job holding the array's pending
// indexes ("2-5%2"). SlurmJob names them by the array's id, as squeue does ("123_4").
void read_array(std::optional<std::int64_t> array_id, std::optional<std::int64_t> task,
                const std::string& pending, SlurmJob& job) {
    if (!array_id || *array_id <= 0) {
        return;
    }
    if (task && *task >= 0 && *task < static_cast<std::int64_t>(k_max_sweep_elements) * 100) {
        job.job_id = std::to_string(*array_id);
        job.array_task = static_cast<int>(*task);
    } else if (!pending.empty()) {
        SlurmJob shaped;
        if (read_slurm_job_id(fmt::format("{}_[{}]", *array_id, pending), shaped)) {
            job.job_id = shaped.job_id;
            job.array_pending = shaped.array_pending;
        }
    }
}

} // namespace

Result<std::vector<SlurmJob>> parse_jobs(const json& body, ApiVersion version) {
    return rest::guarded(what(version, "jobs response"), [&]() {
        return rest::each<SlurmJob>(body, "jobs", [](const json& j) -> Result<SlurmJob> {
            SlurmJob job;
            if (const auto id = rest::number(j, "job_id")) {
                job.job_id = std::to_string(*id);
            }
            job.name = rest::text(j, "name");
            read_state(rest::at_path(j, {"job_state"}), job);
            job.state_reason = rest::text(j, "state_reason");
            read_exit(rest::at_path(j, {"exit_code"}), job);
            job.start_time = rest::timestamp(j, "start_time");
            job.end_time = rest::timestamp(j, "end_time");
            job.nodes = rest::text(j, "nodes");
            job.comment = rest::text(j, "comment");
            job.standard_output = rest::text(j, "standard_output");
            job.user = rest::text(j, "user_name");
            job.submit_time = rest::timestamp(j, "submit_time");
            job.node_count = static_cast<int>(std::clamp<std::int64_t>(
                rest::number(rest::at_path(j, {"node_count"})).value_or(0), 0, 1'000'000));
            job.restarts = static_cast<int>(
                std::clamp<std::int64_t>(rest::number(j, "restart_cnt").value_or(0), 0, 1'000'000));
            read_array(rest::number(j, "array_job_id"), rest::number(j, "array_task_id"),
                       rest::text(j, "array_task_string"), job);
            return job;
        });
    });
}

Result<std::vector<SlurmJob>> parse_db_jobs(const json& body, ApiVersion version) {
    return rest::guarded(what(version, "accounting response"), [&]() {
        return rest::each<SlurmJob>(body, "jobs", [version](const json& j) -> Result<SlurmJob> {
            SlurmJob job;
            if (const auto id = rest::number(j, "job_id")) {
                job.job_id = std::to_string(*id);
            }
            job.name = rest::text(j, "name");
            read_state(rest::at_path(j, {"state", "current"}), job);
            job.state_reason = rest::text(rest::at_path(j, {"state"}), "reason");
            if (is_v38(version)) {
                read_db_exit_v38(rest::at_path(j, {"exit_code"}), job);
            } else {
                read_exit(rest::at_path(j, {"exit_code"}), job);
            }
            job.start_time = rest::timestamp(rest::at_path(j, {"time"}), "start");
            job.end_time = rest::timestamp(rest::at_path(j, {"time"}), "end");
            job.nodes = rest::db_nodes(j);
            job.comment = rest::text(rest::at_path(j, {"comment"}), "job");
            const auto& array = rest::at_path(j, {"array"});
            read_array(rest::number(array, "job_id"), rest::number(array, "task_id"),
                       rest::text(array, "task"), job);
            return job;
        });
    });
}

Result<std::vector<SlurmPartition>> parse_partitions(const json& body, ApiVersion version) {
    return rest::guarded(what(version, "partitions response"), [&]() {
        return rest::each<SlurmPartition>(body, "partitions", [version](const json& p) -> Result<SlurmPartition> {
            SlurmPartition part;
            part.name = rest::text(p, "name");
            auto nodes = expand_hostlist(is_v38(version) ? rest::text(p, "nodes")
                                                         : rest::text(rest::at_path(p, {"nodes"}), "configured"));
            if (!nodes) {
                return tl::unexpected(nodes.error());
            }
            part.nodes = std::move(*nodes);
            read_partition_limits(p, version, part);
            for (const auto& f : rest::strings(p, "flags")) {
                part.is_default = part.is_default || f == "DEFAULT" || (is_v38(version) && f == "default");
            }
            return part;
        });
    });
}

Result<std::vector<SlurmNode>> parse_nodes(const json& body, ApiVersion version) {
    return rest::guarded(what(version, "nodes response"), [&]() {
        return rest::each<SlurmNode>(body, "nodes", [version](const json& n) -> Result<SlurmNode> {
            SlurmNode node;
            node.name = rest::text(n, "name");
            node.state = node_state(n, version);
            node.cpus = static_cast<int>(rest::number(n, "cpus").value_or(0));
            node.alloc_cpus = static_cast<int>(rest::number(n, "alloc_cpus").value_or(0));
            node.real_memory_mb = static_cast<double>(rest::number(n, "real_memory").value_or(0));
            node.gres = rest::text(n, "gres");
            node.gres_used = rest::text(n, "gres_used");
            node.partitions = rest::strings(n, "partitions");
            return node;
        });
    });
}

std::optional<std::string> cancel_refusal(const json& body) {
    const auto& status = rest::at_path(body, {"status"});
    if (!status.is_array()) {
        return std::nullopt;
    }
    for (const auto& entry : status) {
        const auto& error = rest::at_path(entry, {"error"});
        const auto code = rest::number(error, "code");
        if (!code || *code == 0 || *code == 2017 || *code == 2021) {
            continue;
        }
        std::string message = rest::text(error, "message");
        if (message.empty()) {
            message = rest::text(error, "string");
        }
        return rest::one_line(fmt::format("{} (error {})", message.empty() ? "no message" : message, *code));
    }
    return std::nullopt;
}

} // namespace tandem::slurm::api
