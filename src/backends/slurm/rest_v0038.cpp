// slurmrestd v0.0.38 mappers (Slurm 22.05): see rest_v0038.hpp for the facts they rest on.

#include "backends/slurm/rest_v0038.hpp"

#include <cctype>

#include <fmt/format.h>

#include "backends/slurm/hostlist.hpp"
#include "backends/slurm/rest_json.hpp"

namespace tandem::slurm::v0038 {

namespace {

using nlohmann::json;

std::string gres(const SubmitPlan& plan) {
    return plan.gres_type.empty() ? fmt::format("gpu:{}", plan.gpus_per_node)
                                  : fmt::format("gpu:{}:{}", plan.gres_type, plan.gpus_per_node);
}

// Node states come in lower case ("idle", "mixed"); drain is a flag on top ("state_flags": ["DRAIN"]).
std::string node_state(const json& n) {
    std::string state = rest::text(n, "state");
    for (auto& c : state) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (state.rfind("drain", 0) == 0) {
        return "drain";
    }
    for (const auto& f : rest::strings(n, "state_flags")) {
        if (f.rfind("DRAIN", 0) == 0) {
            return "drain";
        }
    }
    return state;
}

} // namespace

json submit_payload(const std::string& script, const SubmitPlan& plan) {
    json job = json::object();
    if (!plan.job_name.empty()) {
        job["name"] = plan.job_name;
    }
    if (!plan.partition.empty()) {
        job["partition"] = plan.partition;
    }
    job["nodes"] = json::array({plan.nodes, plan.nodes}); // [min, max], as the transcript's 2-node job
    job["tasks"] = plan.nodes;
    job["tasks_per_node"] = 1;
    if (plan.gpus_per_node > 0) {
        job["gres"] = gres(plan);
    }
    if (plan.cpus_per_task) {
        job["cpus_per_task"] = *plan.cpus_per_task;
    }
    if (plan.memory_mb_per_node) {
        job["memory_per_node"] = *plan.memory_mb_per_node;
    }
    if (plan.tmp_disk_mb) {
        // Not in the published v0.0.38 schema, but in slurmrestd's option table (--tmp), which decides
        // which keys it accepts: 22.05.8 reads it (a node without TmpDisk then refuses the job, 2014).
        job["temporary_disk_per_node"] = *plan.tmp_disk_mb;
    }
    if (plan.time_limit_minutes) {
        job["time_limit"] = *plan.time_limit_minutes;
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
    json env = json::object();
    for (const auto& [k, v] : plan.environment) {
        env[k] = v;
    }
    if (env.empty()) { // slurmrestd refuses a job without environment
        env["TANDEM_JOB_ID"] = std::to_string(plan.tandem_id);
    }
    job["environment"] = std::move(env);
    return json{{"script", script}, {"job", std::move(job)}};
}

Result<std::string> parse_submit_response(const json& body) {
    return rest::guarded("v0.0.38 submit response", [&]() -> Result<std::string> {
        // A job id means the job exists, even if errors[] holds warnings.
        if (const auto id = rest::number(body, "job_id")) {
            return std::to_string(*id);
        }
        if (auto err = rest::response_error(body)) { // slurmctld declined it: another cluster may not
            return tl::unexpected(refusal(Error{ErrorKind::remote, err->message, {}}));
        }
        return fail(ErrorKind::remote, "slurm: the submit response has neither a job_id nor errors");
    });
}

Result<std::vector<SlurmJob>> parse_jobs(const json& body) {
    return rest::guarded("v0.0.38 jobs response", [&]() {
        return rest::each<SlurmJob>(body, "jobs", [](const json& j) -> Result<SlurmJob> {
            SlurmJob job;
            if (const auto id = rest::number(j, "job_id")) {
                job.job_id = std::to_string(*id);
            }
            job.name = rest::text(j, "name");
            job.state = rest::text(j, "job_state");
            job.state_reason = rest::text(j, "state_reason");
            if (const auto status = rest::number(j, "exit_code")) {
                const auto e = rest::decode_wait_status(*status);
                job.exit_code = e.exit_code;
                job.signal = e.signal;
            }
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
    return rest::guarded("v0.0.38 accounting response", [&]() {
        return rest::each<SlurmJob>(body, "jobs", [](const json& j) -> Result<SlurmJob> {
            SlurmJob job;
            if (const auto id = rest::number(j, "job_id")) {
                job.job_id = std::to_string(*id);
            }
            job.name = rest::text(j, "name");
            job.state = rest::text(rest::at_path(j, {"state"}), "current");
            job.state_reason = rest::text(rest::at_path(j, {"state"}), "reason");
            // Only a signal is trustworthy here: an exit of any code reads as SUCCESS/0 (see the header).
            const auto& ec = rest::at_path(j, {"exit_code"});
            if (rest::text(ec, "status") == "SIGNALED") {
                if (const auto sig = rest::number(rest::at_path(ec, {"signal"}), "signal_id")) {
                    job.signal = static_cast<int>(*sig);
                }
            } else if (const auto rc = rest::number(ec, "return_code"); rc && *rc > 0) {
                job.exit_code = static_cast<int>(*rc);
            }
            job.start_time = rest::timestamp(rest::at_path(j, {"time"}), "start");
            job.end_time = rest::timestamp(rest::at_path(j, {"time"}), "end");
            job.nodes = rest::db_nodes(j);
            job.comment = rest::text(rest::at_path(j, {"comment"}), "job");
            return job;
        });
    });
}

Result<std::vector<SlurmPartition>> parse_partitions(const json& body) {
    return rest::guarded("v0.0.38 partitions response", [&]() {
        return rest::each<SlurmPartition>(body, "partitions", [](const json& p) -> Result<SlurmPartition> {
            SlurmPartition part;
            part.name = rest::text(p, "name");
            auto nodes = expand_hostlist(rest::text(p, "nodes"));
            if (!nodes) {
                return tl::unexpected(nodes.error());
            }
            part.nodes = std::move(*nodes);
            // -1 (INFINITE) or absent: unlimited.
            if (const auto t = rest::number(p, "max_time_limit"); t && *t >= 0) {
                part.max_time_minutes = static_cast<int>(*t);
            }
            // null or absent: no DefaultTime (MaxTime applies).
            if (const auto t = rest::number(p, "default_time_limit"); t && *t >= 0) {
                part.default_time_minutes = static_cast<int>(*t);
            }
            for (const auto& f : rest::strings(p, "flags")) {
                part.is_default = part.is_default || f == "default" || f == "DEFAULT";
            }
            part.state = rest::text(p, "state");
            return part;
        });
    });
}

Result<std::vector<SlurmNode>> parse_nodes(const json& body) {
    return rest::guarded("v0.0.38 nodes response", [&]() {
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

} // namespace tandem::slurm::v0038
