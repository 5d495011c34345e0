// slurmrestd v0.0.40/v0.0.41 mappers (Slurm 23.11, 24.05): see rest_v0040.hpp for the shapes.

#include "backends/slurm/rest_v0040.hpp"

#include <cctype>

#include <fmt/format.h>

#include "backends/slurm/hostlist.hpp"
#include "backends/slurm/rest_json.hpp"

namespace tandem::slurm::v0040 {

namespace {

using nlohmann::json;

json set_number(std::int64_t n) {
    return json{{"set", true}, {"infinite", false}, {"number", n}};
}

std::string lower(std::string s) {
    for (auto& c : s) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

bool contains(const std::vector<std::string>& list, std::string_view item) {
    for (const auto& s : list) {
        if (s == item) {
            return true;
        }
    }
    return false;
}

// {"status": [...], "return_code": N|{...}, "signal": {"id": N|{...}, "name": "..."}}. A plain number
// is read as v0.0.38's raw wait status, the only flat encoding Slurm has used.
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

std::string node_state(const json& n) {
    const auto states = rest::strings(n, "state");
    for (const auto& s : states) {
        if (s.rfind("DRAIN", 0) == 0) {
            return "drain";
        }
    }
    return states.empty() ? std::string() : lower(states.front());
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
    job["minimum_nodes"] = plan.nodes;
    job["maximum_nodes"] = plan.nodes;
    job["tasks"] = plan.nodes;
    job["tasks_per_node"] = 1;
    if (plan.gpus_per_node > 0) {
        job["tres_per_node"] = plan.gres_type.empty()
                                   ? fmt::format("gres/gpu:{}", plan.gpus_per_node)
                                   : fmt::format("gres/gpu:{}:{}", plan.gres_type, plan.gpus_per_node);
    }
    if (plan.cpus_per_task) {
        job["cpus_per_task"] = *plan.cpus_per_task;
    }
    if (plan.memory_mb_per_node) {
        job["memory_per_node"] = set_number(*plan.memory_mb_per_node);
    }
    if (plan.tmp_disk_mb) {
        job["temporary_disk_per_node"] = *plan.tmp_disk_mb;
    }
    if (plan.time_limit_minutes) {
        job["time_limit"] = set_number(*plan.time_limit_minutes);
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
    if (!plan.submit_token.empty()) {
        job["comment"] = plan.submit_token;
    }
    if (!plan.working_directory.empty()) {
        job["current_working_directory"] = plan.working_directory;
    }
    json env = json::array();
    for (const auto& [k, v] : plan.environment) {
        std::string kv = k;
        kv += '=';
        kv += v;
        env.push_back(std::move(kv));
    }
    if (env.empty()) { // slurmrestd refuses a job without environment
        env.push_back("TANDEM_JOB_ID=" + std::to_string(plan.tandem_id));
    }
    job["environment"] = std::move(env);
    if (version != ApiVersion::v0_0_40) { // v0.0.41 deprecates the top-level script, v0.0.42 drops it
        job["script"] = script;
        return json{{"job", std::move(job)}};
    }
    return json{{"script", script}, {"job", std::move(job)}};
}

Result<std::string> parse_submit_response(const json& body) {
    return rest::guarded("v0.0.40 submit response", [&]() -> Result<std::string> {
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

Result<std::vector<SlurmJob>> parse_jobs(const json& body) {
    return rest::guarded("v0.0.40 jobs response", [&]() {
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
            return job;
        });
    });
}

Result<std::vector<SlurmJob>> parse_db_jobs(const json& body) {
    return rest::guarded("v0.0.40 accounting response", [&]() {
        return rest::each<SlurmJob>(body, "jobs", [](const json& j) -> Result<SlurmJob> {
            SlurmJob job;
            if (const auto id = rest::number(j, "job_id")) {
                job.job_id = std::to_string(*id);
            }
            job.name = rest::text(j, "name");
            read_state(rest::at_path(j, {"state", "current"}), job);
            job.state_reason = rest::text(rest::at_path(j, {"state"}), "reason");
            read_exit(rest::at_path(j, {"exit_code"}), job);
            job.start_time = rest::timestamp(rest::at_path(j, {"time"}), "start");
            job.end_time = rest::timestamp(rest::at_path(j, {"time"}), "end");
            job.nodes = rest::db_nodes(j);
            job.comment = rest::text(rest::at_path(j, {"comment"}), "job");
            return job;
        });
    });
}

Result<std::vector<SlurmPartition>> parse_partitions(const json& body) {
    return rest::guarded("v0.0.40 partitions response", [&]() {
        return rest::each<SlurmPartition>(body, "partitions", [](const json& p) -> Result<SlurmPartition> {
            SlurmPartition part;
            part.name = rest::text(p, "name");
            auto nodes = expand_hostlist(rest::text(rest::at_path(p, {"nodes"}), "configured"));
            if (!nodes) {
                return tl::unexpected(nodes.error());
            }
            part.nodes = std::move(*nodes);
            if (const auto t = rest::number(rest::at_path(p, {"maximums", "time"}))) {
                part.max_time_minutes = static_cast<int>(*t);
            }
            if (const auto t = rest::number(rest::at_path(p, {"defaults", "time"}))) {
                part.default_time_minutes = static_cast<int>(*t);
            }
            part.is_default = contains(rest::strings(p, "flags"), "DEFAULT");
            const auto states = rest::strings(rest::at_path(p, {"partition"}), "state");
            part.state = states.empty() ? std::string() : states.front();
            return part;
        });
    });
}

Result<std::vector<SlurmNode>> parse_nodes(const json& body) {
    return rest::guarded("v0.0.40 nodes response", [&]() {
        return rest::each<SlurmNode>(body, "nodes", [](const json& n) -> Result<SlurmNode> {
            SlurmNode node;
            node.name = rest::text(n, "name");
            node.state = node_state(n);
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

} // namespace tandem::slurm::v0040
