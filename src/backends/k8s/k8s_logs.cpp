// `logs` for Kubernetes jobs: the container log of each rank's pod through the API server
// (pods/{pod}/log, chunked with follow=true), every rank at once with "[rank K] " prefixes when the job has
// several, waiting while a pod is not running yet.

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "backends/k8s/job_state.hpp"
#include "backends/k8s/job_state_pods.hpp"
#include "backends/k8s/json_fields.hpp"
#include "backends/k8s/k8s_backend.hpp"
#include "backends/k8s/labels.hpp"
#include "backends/k8s/serve_manifests.hpp"
#include "core/line_prefix.hpp"
#include "core/sweep.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

constexpr auto k_poll = std::chrono::milliseconds(500);

int rank_of(const json& pod) {
    std::string text = fields::str_at(pod, "metadata", "labels", k_rank_label);
    if (text.empty()) {
        text = fields::str_at(pod, "metadata", "annotations", k_completion_index_annotation);
    }
    int rank = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
    return ec == std::errc{} && end == text.data() + text.size() && rank >= 0 ? rank : 0;
}

std::string phase_of(const json& pod) {
    return fields::str_at(pod, "status", "phase");
}

// Started: a container that runs or ran has a log to read.
bool has_started(const json& pod) {
    const auto phase = phase_of(pod);
    if (phase == "Running" || phase == "Succeeded" || phase == "Failed") {
        return true;
    }
    const json* statuses = fields::at(pod, "status", "containerStatuses");
    for (const auto& cs : statuses != nullptr && statuses->is_array() ? *statuses : json::array()) {
        if (fields::at(cs, "state", "running") != nullptr || fields::at(cs, "state", "terminated") != nullptr) {
            return true;
        }
    }
    return false;
}

// Lines of one stream, each with the prefix, to a shared sink.
class LinePrefixer {
public:
    LinePrefixer(const LogSink& sink, std::mutex& mutex, std::string prefix)
        : m_sink(sink), m_mutex(mutex), m_plain(prefix.empty()), m_lines(std::move(prefix)) {}

    bool stopped() const { return m_stopped; }

    bool feed(std::string_view chunk) {
        if (m_plain) {
            std::lock_guard lock(m_mutex);
            m_stopped = m_stopped || !m_sink(chunk);
            return !m_stopped;
        }
        const std::string out = m_lines.feed(chunk);
        if (out.empty()) {
            return true;
        }
        std::lock_guard lock(m_mutex);
        m_stopped = m_stopped || !m_sink(out);
        return !m_stopped;
    }

    // The last line of a stream that did not end with a newline, once (a rank's log is several streams,
    // one per attempt).
    bool finish() {
        const std::string line = m_lines.finish();
        if (line.empty()) {
            return true;
        }
        std::lock_guard lock(m_mutex);
        return m_sink(line);
    }

private:
    const LogSink& m_sink;
    std::mutex& m_mutex;
    bool m_plain;
    LinePrefix m_lines;
    bool m_stopped = false;
};

} // namespace

Result<std::map<int, std::vector<json>>> K8sBackend::rank_attempts(const std::string& ns,
                                                                  const std::string& base) {
    auto pods = m_api.call("GET", fmt::format("/api/v1/namespaces/{}/pods?labelSelector={}", ns,
                                              query_escape(job_selector(base))));
    if (!pods) {
        return tl::unexpected(pods.error());
    }
    std::map<int, std::vector<json>> out;
    for (const auto& pod : fields::items(pods->body)) {
        out[rank_of(pod)].push_back(pod);
    }
    // Oldest first: by creation (whole seconds), and within one second a pod that failed before the one
    // that replaced it, then the one written first (resourceVersion, as job_state.cpp's later()), then by
    // name.
    auto key = [](const json& pod) {
        const auto rv = fields::str_at(pod, "metadata", "resourceVersion");
        std::int64_t written = 0;
        if (std::from_chars(rv.data(), rv.data() + rv.size(), written).ec != std::errc()) {
            written = 0;
        }
        return std::make_tuple(parse_rfc3339(fields::str_at(pod, "metadata", "creationTimestamp")).value_or(0),
                               phase_of(pod) == "Failed" ? 0 : 1, written, fields::str_at(pod, "metadata", "name"));
    };
    for (auto& [rank, list] : out) {
        std::stable_sort(list.begin(), list.end(), [&](const json& a, const json& b) { return key(a) < key(b); });
    }
    return out;
}

Result<std::map<int, json>> K8sBackend::rank_pods(const std::string& ns, const std::string& base) {
    auto attempts = rank_attempts(ns, base);
    if (!attempts) {
        return tl::unexpected(attempts.error());
    }
    std::map<int, json> out;
    for (auto& [rank, list] : *attempts) {
        out[rank] = std::move(list.back()); // a retried rank has several pods: the newest is the one that counts
    }
    return out;
}

namespace {

// Why a replaced pod ended, for the attempt marker: "exit code 3", "evicted (EvictionByEvictionAPI)".
std::string ended_because(const json& pod) {
    if (const auto how = detail::disruption(pod)) {
        return how->empty() || *how == "Evicted" ? "evicted" : "evicted (" + *how + ")";
    }
    auto why = detail::describe_failure(pod).reason;
    return why.empty() ? "its pod ended" : why;
}

// Whether the Job may still make a pod for this job (no Complete or Failed condition on any of its Jobs).
bool jobs_going(const json& list) {
    const auto& items = fields::items(list);
    if (items.empty()) {
        return false;
    }
    for (const auto& job : items) {
        const json* conds = fields::at(job, "status", "conditions");
        for (const auto& c : conds != nullptr && conds->is_array() ? *conds : json::array()) {
            const auto type = fields::str_at(c, "type");
            if ((type == "Complete" || type == "Failed") && fields::str_at(c, "status") == "True") {
                return false;
            }
        }
    }
    return true;
}

} // namespace

// One rank's log: every pod the Job made for it, oldest first (a recovered job has several), each after
// a "tandem: attempt N" line when there is more than one. With follow, a pod replaced while it is read
// is followed by its replacement.
Status K8sBackend::follow_pod(const std::string& ns, const std::string& base, int rank,
                              const LogOptions& options, const LogSink& sink, const std::string& prefix) {
    std::mutex own_mutex;
    static std::mutex shared_mutex; // one stdout for every rank of this invocation
    LinePrefixer out(sink, prefix.empty() ? own_mutex : shared_mutex, prefix);
    std::set<std::string> streamed; // the pods whose log was shown
    auto jobs_path = fmt::format("/apis/batch/v1/namespaces/{}/jobs?labelSelector={}", ns,
                                 query_escape(job_selector(base)));
    for (;;) {
        auto all = rank_attempts(ns, base);
        if (!all) {
            return tl::unexpected(all.error());
        }
        auto it = all->find(rank);
        const std::vector<json> none;
        const auto& pods = it == all->end() ? none : it->second;
        // The oldest pod not read yet; a replaced pod that never started has nothing to read.
        const json* next = nullptr;
        std::size_t index = 0;
        for (std::size_t i = 0; i < pods.size(); ++i) {
            const auto name = fields::str_at(pods[i], "metadata", "name");
            if (streamed.count(name) != 0 || (i + 1 < pods.size() && !has_started(pods[i]))) {
                continue;
            }
            next = &pods[i];
            index = i;
            break;
        }
        if (next == nullptr) {
            if (!options.follow) {
                break; // every pod read (or none yet, or any more)
            }
            const json* newest = pods.empty() ? nullptr : &pods.back();
            const bool ended = newest != nullptr && (phase_of(*newest) == "Succeeded" || phase_of(*newest) == "Failed" ||
                                                     fields::at(*newest, "metadata", "deletionTimestamp") != nullptr);
            if (newest == nullptr || ended) {
                // The rank's last pod ended (or there is none): done unless its Job makes another (a retry
                // or a replacement after an eviction), or it has not made the first yet.
                auto jobs = m_api.call("GET", jobs_path);
                if (!jobs) {
                    return tl::unexpected(jobs.error());
                }
                if (!jobs_going(jobs->body) || (newest == nullptr && !streamed.empty())) {
                    break;
                }
            }
            std::this_thread::sleep_for(k_poll);
            continue;
        }
        const json& pod = *next;
        const auto name = fields::str_at(pod, "metadata", "name");
        if (!has_started(pod)) {
            if (!options.follow) {
                break;
            }
            std::this_thread::sleep_for(k_poll);
            continue;
        }
        if (pods.size() > 1 || !streamed.empty()) {
            std::string line = fmt::format("tandem: attempt {}", index + 1);
            if (index > 0) {
                line += fmt::format(" (the previous pod: {})", ended_because(pods[index - 1]));
            }
            if (!out.feed(line + "\n")) {
                break;
            }
        }
        std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}/log?container=main", ns, name);
        if (options.follow) {
            path += "&follow=true";
        }
        if (options.tail_lines) {
            path += fmt::format("&tailLines={}", *options.tail_lines);
        }
        int status = 0;
        auto read = m_api.stream(
            path, [&](std::string_view piece) { return out.feed(piece); }, {400, 404}, &status);
        if (!read) {
            return read;
        }
        out.finish();
        if (status == 400 || status == 404) { // not started after all, or gone: look again
            if (!options.follow) {
                streamed.insert(name);
                continue;
            }
            std::this_thread::sleep_for(k_poll);
            continue;
        }
        streamed.insert(name);
        if (out.stopped()) {
            break;
        }
        if (options.follow && phase_of(pod) != "Succeeded" && phase_of(pod) != "Failed") {
            std::this_thread::sleep_for(k_poll); // its log ended as the pod did: let the listing catch up
        }
    }
    out.finish();
    return {};
}

Status K8sBackend::logs(const JobRecord& job, const LogOptions& options, const LogSink& sink) {
    const auto [ns, base] = split_remote_id(job.remote_id, m_settings.namespace_name);
    if (auto sweep = sweep_of(job)) { // each completion index is an element: one after another
        auto which = log_elements(job.id, *sweep, options.element);
        if (!which) {
            return tl::unexpected(which.error());
        }
        for (const std::size_t i : *which) {
            const auto prefix = options.element ? std::string() : "[" + sweep_element_label(*sweep, i) + "] ";
            if (auto ok = follow_pod(ns, base, static_cast<int>(i), options, sink, prefix); !ok) {
                return ok;
            }
        }
        return {};
    }
    std::vector<int> ranks;
    if (options.node) {
        ranks.push_back(*options.node);
    } else {
        for (int r = 0; r < job.num_nodes; ++r) {
            ranks.push_back(r);
        }
    }
    const bool prefixed = ranks.size() > 1;
    if (!options.follow || ranks.size() == 1) {
        for (int r : ranks) {
            auto ok = follow_pod(ns, base, r, options, sink, prefixed ? fmt::format("[rank {}] ", r) : "");
            if (!ok) {
                return ok;
            }
        }
        return {};
    }
    // Following several ranks: one stream each, at once (the first listing makes the connection, so the
    // threads share a ready client).
    if (auto first = rank_pods(ns, base); !first) {
        return tl::unexpected(first.error());
    }
    std::vector<std::thread> threads;
    std::vector<Status> results(ranks.size());
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        threads.emplace_back([&, i] {
            results[i] = follow_pod(ns, base, ranks[i], options, sink, fmt::format("[rank {}] ", ranks[i]));
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (auto& r : results) {
        if (!r) {
            return r;
        }
    }
    return {};
}

} // namespace tandem::k8s

namespace tandem::k8s {

// `serve logs`: every replica's container log, "[replica K] " before each line, K numbering the pods in
// the order they were made (1 first). With follow, replicas made later (a scale-up, a rolling update) are
// picked up as they start, until the reader stops or the service is gone.
Status K8sBackend::serve_logs(const ServiceRef& ref, const LogOptions& options, const LogSink& sink) {
    const std::string ns = ref.namespace_name.empty() ? m_settings.namespace_name : ref.namespace_name;
    const std::string list_path = fmt::format("/api/v1/namespaces/{}/pods?labelSelector={}", ns,
                                              query_escape(service_selector(ref.name)));
    std::mutex mutex;
    std::map<std::string, int> numbers;
    std::set<std::string> streaming;
    std::vector<std::thread> threads;
    std::atomic<bool> stop{false};
    std::mutex results_mutex;
    std::optional<Error> first_error;
    auto stream_pod = [&](const std::string& pod, int number) {
        LinePrefixer out(sink, mutex, fmt::format("[replica {}] ", number));
        std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}/log?container=main", ns, pod);
        if (options.follow) {
            path += "&follow=true";
        }
        if (options.tail_lines) {
            path += fmt::format("&tailLines={}", *options.tail_lines);
        }
        auto streamed = m_api.stream(path, [&](std::string_view piece) { return !stop && out.feed(piece); }, {400, 404});
        out.finish();
        if (out.stopped()) {
            stop = true;
        }
        if (!streamed) {
            std::lock_guard lock(results_mutex);
            if (!first_error) {
                first_error = streamed.error();
            }
        }
    };
    for (bool first = true;; first = false) {
        auto pods = m_api.call("GET", list_path);
        if (!pods) {
            stop = true;
            for (auto& t : threads) {
                t.join();
            }
            return tl::unexpected(pods.error());
        }
        std::vector<json> items(fields::items(pods->body).begin(), fields::items(pods->body).end());
        std::sort(items.begin(), items.end(), [](const json& a, const json& b) {
            const auto ca = fields::str_at(a, "metadata", "creationTimestamp");
            const auto cb = fields::str_at(b, "metadata", "creationTimestamp");
            return ca != cb ? ca < cb : fields::str_at(a, "metadata", "name") < fields::str_at(b, "metadata", "name");
        });
        for (const auto& pod : items) {
            const auto name = fields::str_at(pod, "metadata", "name");
            if (numbers.count(name) == 0) {
                numbers[name] = static_cast<int>(numbers.size()) + 1;
            }
            if (streaming.count(name) != 0 || !has_started(pod)) {
                continue;
            }
            streaming.insert(name);
            if (options.follow) {
                threads.emplace_back(stream_pod, name, numbers[name]);
            } else {
                stream_pod(name, numbers[name]);
            }
        }
        if (!options.follow) {
            break;
        }
        if (stop || (!first && items.empty())) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    for (auto& t : threads) {
        t.join();
    }
    if (first_error) {
        return tl::unexpected(*first_error);
    }
    return {};
}

} // namespace tandem::k8s
