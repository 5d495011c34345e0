// The JSON skimmers a refresh runs on every answer: Slurm's GET /jobs (slurm/jobs_skim) and Kubernetes'
// List of pods (k8s/job_state_skim), each over 1,000 items made from recorded answers, beside a full
// nlohmann parse of the same text. Issue 30 asked that merging their scanners keep them as fast.

#include <fstream>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "backends/k8s/job_state_skim.hpp"
#include "backends/slurm/jobs_skim.hpp"
#include "backends/slurm/rest_json.hpp"

namespace {

// The recorded answer with its list `key` grown to `count` items by repeating the recorded ones.
std::string grown(const char* file, const char* key, int count) {
    std::ifstream in(std::string(TANDEM_FIXTURES) + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    auto body = nlohmann::json::parse(text.str());
    const auto recorded = body[key];
    auto& list = body[key];
    list = nlohmann::json::array();
    for (int i = 0; i < count; ++i) {
        list.push_back(recorded[static_cast<std::size_t>(i) % recorded.size()]);
    }
    return body.dump();
}

const std::string& slurm_jobs() {
    static const std::string text = grown("slurm/v0.0.40/jobs.json", "jobs", 1000);
    return text;
}

const std::string& k8s_pods() {
    static const std::string text = grown("k8s/recorded-v1.20/pods.json", "items", 1000);
    return text;
}

void slurm_skim(benchmark::State& state) {
    for (auto _ : state) {
        auto answer = tandem::slurm::rest::skim_jobs(slurm_jobs(), tandem::slurm::rest::is_job_field);
        benchmark::DoNotOptimize(answer);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * slurm_jobs().size()));
}

void slurm_full_parse(benchmark::State& state) {
    for (auto _ : state) {
        auto answer = nlohmann::json::parse(slurm_jobs());
        benchmark::DoNotOptimize(answer);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * slurm_jobs().size()));
}

void k8s_skim(benchmark::State& state) {
    for (auto _ : state) {
        auto list = tandem::k8s::skim_status_list(k8s_pods());
        benchmark::DoNotOptimize(list);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * k8s_pods().size()));
}

void k8s_full_parse(benchmark::State& state) {
    for (auto _ : state) {
        auto list = nlohmann::json::parse(k8s_pods());
        benchmark::DoNotOptimize(list);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * k8s_pods().size()));
}

} // namespace

BENCHMARK(slurm_skim)->Unit(benchmark::kMillisecond);
BENCHMARK(slurm_full_parse)->Unit(benchmark::kMillisecond);
BENCHMARK(k8s_skim)->Unit(benchmark::kMillisecond);
BENCHMARK(k8s_full_parse)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
