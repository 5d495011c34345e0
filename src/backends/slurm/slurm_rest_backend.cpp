#include "backends/slurm/slurm_rest_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "backends/file_log.hpp"
#include "backends/inventory_cache.hpp"
#include "backends/slurm/group_channel.hpp"
#include "backends/slurm/jobs_skim.hpp"
#include "backends/slurm/jobs_snapshot.hpp"
#include "backends/slurm/rank_output.hpp"
#include "backends/slurm/remote_log.hpp"
#include "backends/slurm/remote_upload.hpp"
#include "backends/slurm/rest_json.hpp"
#include "backends/slurm/rest_api.hpp"
#include "backends/slurm/sbatch_script.hpp"
#include "backends/slurm/slurm_exec.hpp"
#include "backends/slurm/slurm_inventory.hpp"
#include "backends/slurm/submit_plan.hpp"
#include "core/job_group.hpp"
#include "core/quantity.hpp"
#include "net/ssh_keys.hpp"
#include "sys/clock.hpp"

namespace tandem::slurm {

namespace {

constexpr std::int64_t k_api_cache_seconds = 3600;

using sys::now_seconds;

} // namespace

SlurmRestBackend::SlurmRestBackend(std::string cluster, SlurmSettings settings, std::string state_dir,
                                   std::unique_ptr<net::HttpClient> http)
    : SlurmBackend(std::move(cluster), std::move(settings), state_dir),
      m_cache_file(state_dir + "/cache/slurm-api-" + m_cluster + ".json"),
      m_jobs_snapshot_file(state_dir + "/cache/slurm-jobs-" + m_cluster + ".json"), m_http(std::move(http)) {}

// slurmrestd answers most failures with HTTP 500 and a JSON errors[] list, so 400 and 500 are read here
// rather than turned into generic HTTP errors.
Result<nlohmann::json> SlurmRestBackend::call(const std::string& method, const std::string& p,
                                              const std::string& body, bool idempotent, bool jobs_only) {
    const auto& rest = *m_settings.rest;
    net::HttpRequest request;
    request.method = method;
    request.url = rest.url + p;
    request.headers = {{"X-SLURM-USER-NAME", rest.user}, {"X-SLURM-USER-TOKEN", rest.token}};
    request.body = body;
    if (!body.empty()) {
        request.content_type = "application/json";
    }
    request.timeout = m_settings.timeout;
    request.idempotent = idempotent;
    request.pass_statuses = {400, 401, 404, 500, 511};
    if (jobs_only) {
        request.pass_statuses.push_back(304);
    }
    auto response = m_http->request(request);
    auto named = [&](Error e) {
        e.message = fmt::format("cluster {}: {}", m_cluster, e.message);
        if (e.kind == ErrorKind::unauthorized && e.hint.empty()) {
            e.hint = "mint a new token (`scontrol token lifespan=86400`) and update the cluster's rest.token";
        }
        return tl::unexpected(std::move(e));
    };
    if (!response) {
        return named(response.error());
    }
    // A 304 answers an incremental GET /jobs (jobs_snapshot.hpp): nothing changed, no body.
    if (jobs_only && response->status == 304) {
        return nlohmann::json();
    }
    // For GET /jobs, parse only the members the job parsers read (jobs_skim.hpp): building the rest of the
    // answer would cost more than the request. Anything the skimmer cannot read is parsed in full below,
    // which says what is wrong with it.
    if (jobs_only && response->status < 400) {
        if (auto skimmed = slurm::rest::skim_jobs(response->body, slurm::rest::is_job_field)) {
            return std::move(*skimmed);
        }
    }
    // 23.11 and later answer a wrong or expired token with 511 (error 1007, "Protocol authentication
    // error"; on some paths errors[] is empty), and a request without one with 401 and a plain-text body
    // ("Authentication failure"), so this comes before the body is read as JSON.
    if (response->status == 511 || response->status == 401) {
        return named(Error{ErrorKind::unauthorized,
                           fmt::format("slurmrestd at {} refused the token of user {} (HTTP {})", rest.url,
                                       rest.user, response->status),
                           {}});
    }
    nlohmann::json json = nlohmann::json::parse(response->body, nullptr, false);
    if (json.is_discarded()) {
        std::string excerpt = response->body.substr(0, 120);
        std::replace(excerpt.begin(), excerpt.end(), '\n', ' ');
        return named(
            Error{ErrorKind::remote,
                  fmt::format("slurmrestd answered HTTP {} with non-JSON: {}", response->status, excerpt),
                  {}});
    }
    if (response->status >= 400) {
        auto err = slurm::rest::response_error(json);
        Error e =
            err ? *err
                : Error{ErrorKind::remote, fmt::format("slurmrestd answered HTTP {}", response->status), {}};
        // Slurm 22.05 answers an expired or wrong JWT with HTTP 500 "Unspecified error" (error -1), not 401.
        const auto& errors = slurm::rest::at_path(json, {"errors"});
        for (const auto& item : errors.is_array() ? errors : nlohmann::json::array()) {
            if (!item.is_object()) {
                continue;
            }
            // (Not rest::number: it reads -1 as Slurm's INFINITE.)
            auto is_minus_one = [&item](const char* key) {
                const auto it = item.find(key);
                return it != item.end() && it->is_number_integer() && it->get<std::int64_t>() == -1;
            };
            const bool minus_one = is_minus_one("error_number") || is_minus_one("errno");
            if (minus_one && slurm::rest::text(item, "error") == "Unspecified error") {
                e.kind = ErrorKind::unauthorized;
                e.message =
                    fmt::format("slurmrestd at {} refused the request for user {}: the token is expired "
                                "or wrong (Slurm answers \"Unspecified error\")",
                                rest.url, rest.user);
            }
        }
        // slurmctld's own errors[] on a submit (partition access, QOS or account limits, a node
        // configuration it cannot meet) decline this job here; another cluster may take it.
        e.refused = err && method == "POST" && e.kind != ErrorKind::unauthorized;
        return named(e);
    }
    return json;
}

Result<ApiChoice> SlurmRestBackend::api() {
    if (m_api) {
        return *m_api;
    }
    const auto& wanted = m_settings.rest->api_version;
    // The discovery is cached: `status` must cost one request, not two.
    std::ifstream cached(m_cache_file);
    auto j = nlohmann::json::parse(cached, nullptr, false);
    if (!j.is_discarded() && j.value("url", "") == m_settings.rest->url &&
        now_seconds() - j.value("at", std::int64_t{0}) < k_api_cache_seconds) {
        auto choice = choose_api_version(j.value("paths", nlohmann::json::array()), wanted);
        if (choice) {
            m_api = *choice;
            return *m_api;
        }
    }
    auto doc = call("GET", "/openapi/v3", "", true);
    if (!doc) {
        return tl::unexpected(doc.error());
    }
    nlohmann::json paths = nlohmann::json::array();
    const auto& served = slurm::rest::at_path(*doc, {"paths"});
    if (served.is_object()) {
        for (const auto& [p, _] : served.items()) {
            paths.push_back(p);
        }
    }
    auto choice = choose_api_version(paths, wanted);
    if (!choice) {
        return in_cluster(choice.error());
    }
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(m_cache_file).parent_path(), ec);
    std::ofstream(m_cache_file) << nlohmann::json{
        {"url", m_settings.rest->url}, {"at", now_seconds()}, {"paths", paths}};
    m_api = *choice;
    return *m_api;
}

std::string SlurmRestBackend::path(const char* tree, const std::string& rest) {
    return fmt::format("/{}/{}{}", tree, to_string(m_api->version), rest);
}

Result<std::string> SlurmRestBackend::check() {
    auto choice = api();
    if (!choice) {
        return tl::unexpected(choice.error());
    }
    auto ping = call("GET", path("slurm", "/ping"), "", true);
    if (!ping) {
        return tl::unexpected(ping.error());
    }
    // Ping does not check the token on 22.05; listing partitions does.
    auto partitions = call("GET", path("slurm", "/partitions"), "", true);
    if (!partitions) {
        return tl::unexpected(partitions.error());
    }
    // The release is meta.Slurm.release up to 23.x, meta.slurm.release from 24.x.
    std::string release = slurm::rest::text(slurm::rest::at_path(*ping, {"meta", "Slurm"}), "release");
    if (release.empty()) {
        release = slurm::rest::text(slurm::rest::at_path(*ping, {"meta", "slurm"}), "release");
    }
    // v0.0.40+ partition answers carry no Default flag: without default_partition, tandem cannot go
    // where a plain sbatch would.
    const bool default_unknown =
        choice->version != ApiVersion::v0_0_38 && m_settings.default_partition.empty();
    return fmt::format(
        "{}slurmrestd at {}, API {}{}, user {}{}", release.empty() ? "" : "Slurm " + release + ", ",
        m_settings.rest->url, to_string(choice->version), choice->accounting ? " + accounting" : "",
        m_settings.rest->user,
        default_unknown ? "; default partition unknown over this API (set default_partition)" : "");
}

Result<std::pair<std::vector<SlurmPartition>, std::vector<SlurmNode>>> SlurmRestBackend::read_partitions() {
    auto choice = api();
    if (!choice) {
        return tl::unexpected(choice.error());
    }
    auto pj = call("GET", path("slurm", "/partitions"), "", true);
    if (!pj) {
        return tl::unexpected(pj.error());
    }
    auto nj = call("GET", path("slurm", "/nodes"), "", true);
    if (!nj) {
        return tl::unexpected(nj.error());
    }
    auto partitions = api::parse_partitions(*pj, choice->version);
    auto nodes = api::parse_nodes(*nj, choice->version);
    if (!partitions || !nodes) {
        return in_cluster(partitions ? nodes.error() : partitions.error());
    }
    return std::pair{std::move(*partitions), std::move(*nodes)};
}

Result<SubmitPlan> SlurmRestBackend::submit_plan(const TaskSpec& spec, const Placement& placement,
                                                 std::int64_t job_id, const JobIdentity& identity) {
    auto built = plan_on_partition(spec, placement, job_id, identity, std::chrono::seconds(0));
    if (!built) {
        return tl::unexpected(built.error());
    }
    SubmitPlan plan = std::move(*built);
    plan.working_directory = spec.workdir.value_or(m_settings.home);
    // slurmrestd starts the job with only the submitted environment: the login basics come first.
    plan.group_book_in_comment = !spec.group_channel.empty() && !m_files;
    plan.environment.insert(plan.environment.begin(), {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                                                       {"HOME", m_settings.home},
                                                       {"USER", m_settings.rest->user}});
    return plan;
}

Result<SlurmRestBackend::Prepared> SlurmRestBackend::prepare_submit(const TaskSpec& spec,
                                                                    const Placement& placement,
                                                                    std::int64_t job_id, bool mask_secrets,
                                                                    const JobIdentity& identity,
                                                                    const std::vector<MountCopy>& mounts) {
    auto plan = submit_plan(spec, placement, job_id, identity);
    if (!plan) {
        return tl::unexpected(plan.error());
    }
    plan->file_mounts = mounts;
    // slurmrestd takes a job's options from the JSON description and reads no #SBATCH line of the
    // script, so an option it has no field for cannot be passed on.
    if (!plan->extra_options.empty()) {
        return fail(
            ErrorKind::invalid_spec,
            fmt::format("config.slurm.sbatch_options.{}: cluster {} is reached over slurmrestd, which "
                        "takes no sbatch options beyond tandem's fields (partition, account, qos, "
                        "constraint, time)",
                        plan->extra_options.front().first, m_cluster),
            "configure the cluster with `ssh:` and no `rest:` (sbatch on the login node reads every "
            "option), or drop the option");
    }
    auto script = render_sbatch_script(spec, *plan);
    if (!script) {
        return tl::unexpected(script.error());
    }
    auto choice = api();
    if (!choice) {
        return tl::unexpected(choice.error());
    }
    if (mask_secrets) { // for `plan`: its output must never show a secret's value
        for (auto& [k, v] : plan->environment) {
            for (const auto& secret : spec.secrets) {
                v = secret.first == k ? "<secret>" : v;
            }
        }
    }
    auto payload = api::submit_payload(*script, *plan, choice->version);
    return Prepared{std::move(*plan), std::move(*script), std::move(payload)};
}

Result<std::string> SlurmRestBackend::render(const TaskSpec& spec, const Placement& placement,
                                             std::int64_t job_id) {
    auto prepared = prepare_submit(spec, placement, job_id, true);
    if (!prepared) {
        return tl::unexpected(prepared.error());
    }
    auto& payload = prepared->payload;
    payload.erase("script");
    if (payload.contains("job")) {
        payload["job"].erase("script");
    }
    return fmt::format("# POST {}/slurm/{}/job/submit\n# script:\n{}\n# job options:\n{}\n",
                       m_settings.rest->url, to_string(m_api->version), prepared->script, payload.dump(2));
}

Result<std::optional<std::string>> SlurmRestBackend::find_by_token(const std::string& token) {
    auto jobs = list_jobs();
    if (!jobs) {
        return tl::unexpected(jobs.error());
    }
    for (const auto& j : *jobs) {
        if (comment_has_token(j.comment, token)) {
            return j.job_id;
        }
    }
    return std::nullopt;
}

Result<std::string> SlurmRestBackend::submit(const TaskSpec& given, const Placement& placement,
                                             std::int64_t job_id, const JobIdentity& identity) {
    const std::string& token = identity.token;
    // With ssh: the workdir and file_mounts are sent to the cluster first and the job runs in its copy.
    std::vector<MountCopy> mounts;
    auto uploaded =
        with_uploads(m_files.get(), given, m_settings.home, m_settings.workdir_limit_bytes,
                     token.empty() ? random_submit_token() : "tandem-" + token, m_cluster, mounts);
    if (!uploaded) {
        return tl::unexpected(uploaded.error());
    }
    const TaskSpec& spec = *uploaded;
    auto prepared = prepare_submit(spec, placement, job_id, false, identity, mounts);
    if (!prepared) {
        return tl::unexpected(prepared.error());
    }
    const auto& plan = prepared->plan;
    const auto& payload = prepared->payload;
    const std::string body = payload.dump();
    const auto submit_path = path("slurm", "/job/submit");
    auto answer = call("POST", submit_path, body, false);
    // A dropped connection, a timeout or an answer tandem cannot read (cut, not JSON, too large) may hide
    // a submit that reached slurmctld. The job's comment carries a token only this submit knows: look for
    // it before trying again, so a retry never makes a second job. Only a lookup that answered "not
    // there" allows another submit (one that failed too leaves it unknown), and only after a transient
    // failure: a submit that timed out would take that time again, past the cluster's deadline, and an
    // unreadable answer would come again.
    auto answer_lost = [](const Error& e) {
        return is_retryable(e.kind) || (e.kind == ErrorKind::remote && !e.refused);
    };
    for (int attempt = 1; !answer && answer_lost(answer.error()); ++attempt) {
        const bool last =
            attempt >= 3 || !is_retryable(answer.error().kind) || answer.error().kind == ErrorKind::timeout;
        if (!last) {
            std::this_thread::sleep_for(std::chrono::milliseconds(300 * attempt));
        }
        auto existing = find_by_token(plan.submit_token);
        if (existing && *existing) {
            remember_output(job_id, plan.output_pattern, **existing);
            return **existing;
        }
        if (!existing || last) {
            break;
        }
        answer = call("POST", submit_path, body, false);
    }
    if (!answer) {
        return tl::unexpected(answer.error());
    }
    auto id = api::parse_submit_response(*answer, m_api->version);
    if (!id) {
        return in_cluster(id.error());
    }
    remember_output(job_id, plan.output_pattern, *id);
    return *id;
}

// slurmrestd cannot write a file: the book goes over the cluster's ssh: host when it has one, else into
// the job's comment (kept after the submit token), where the nodes read it with scontrol.
Status SlurmRestBackend::publish(const JobRecord& job, const std::string& channel, const std::string& book) {
    if (m_files) {
        return publish_book(*m_files, m_settings.home, channel, book, m_cluster);
    }
    auto listed = list_jobs();
    if (!listed) {
        return tl::unexpected(listed.error());
    }
    std::string comment;
    for (const auto& j : *listed) {
        if (j.job_id == job.remote_id) {
            comment = j.comment.substr(0, std::min(j.comment.find(k_comment_book_marker),
                                                   j.comment.find(k_old_comment_book_marker)));
        }
    }
    comment += std::string(k_comment_book_marker) + net::base64_encode(book);
    auto api = this->api();
    if (!api) {
        return tl::unexpected(api.error());
    }
    const nlohmann::json body = {{"comment", comment}};
    auto answer = call("POST", path("slurm", "/job/" + job.remote_id), body.dump(), false);
    if (!answer) {
        Error e = answer.error();
        e.message = fmt::format("cluster {}: cannot put the group's addresses in job {}'s comment: {}",
                                m_cluster, job.remote_id, e.message);
        return tl::unexpected(e);
    }
    return {};
}

// The comment goes with the job; a file over ssh: is removed.
Status SlurmRestBackend::unpublish(const JobRecord& job, const std::string& channel) {
    (void)job;
    return m_files ? unpublish_book(*m_files, m_settings.home, channel, m_cluster) : Status{};
}

Status SlurmRestBackend::cancel_slurm_job(const JobRecord& job, const std::string& slurm_id) {
    (void)job;
    auto choice = api();
    if (!choice) {
        return tl::unexpected(choice.error());
    }
    auto answer = call("DELETE", path("slurm", "/job/" + slurm_id), "", true);
    if (!answer) {
        if (answer.error().kind != ErrorKind::not_found) {
            return tl::unexpected(answer.error());
        }
        return {};
    }
    // v0.0.42 answers HTTP 200 with errors[] empty and says per job, in status[], what the signal did.
    if (auto refused = api::cancel_refusal(*answer)) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: slurmctld did not cancel Slurm job {}: {}",
                                                   m_cluster, slurm_id, *refused));
    }
    return {};
}

Status SlurmRestBackend::logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) {
    if (auto sweep = sweep_of(job)) {
        return sweep_logs(job, *sweep, options, sink,
                          [&](const std::string& path, const LogOptions& o, const LogSink& out,
                              const std::function<Result<bool>()>& ended) {
                              return stream_output(job, path, o, out, ended);
                          });
    }
    // Following asks slurmrestd whether the job ended at most every half second.
    return stream_output(job, output_path(job), options, sink, [&]() -> Result<bool> {
        auto updates = refresh({job});
        return updates && is_terminal(updates->front().state);
    });
}

Status SlurmRestBackend::stream_output(const JobRecord& job, const std::string& file,
                                       const LogOptions& options, const LogSink& sink,
                                       const std::function<Result<bool>()>& ended) {
    if (m_files) { // ssh: read the file over SFTP
        return stream_remote_log(*m_files, RemoteLogTarget{m_cluster, job.id, file, job.num_nodes}, options,
                                 sink, ended);
    }
    std::error_code ec;
    const bool visible = std::filesystem::exists(std::filesystem::path(file).parent_path(), ec);
    if (!visible) {
        return fail(
            ErrorKind::unavailable,
            fmt::format("cluster {}: job {}'s output ({}) is not visible from this machine, and slurmrestd "
                        "cannot read files",
                        m_cluster, job.id, file),
            "run tandem on a login node with the shared filesystem, or give the cluster ssh: settings");
    }
    // Every node's lines are in the one file, labelled with the rank (srun --label).
    RankOutput shown(job.num_nodes, options.node);
    auto status = backends::stream_file(
        file, options, [&](std::string_view chunk) { return sink(shown.feed(chunk)); },
        [&] {
            auto over = ended();
            return over && *over;
        },
        std::chrono::milliseconds(500));
    if (status) {
        sink(shown.finish());
    }
    return status;
}

} // namespace tandem::slurm
