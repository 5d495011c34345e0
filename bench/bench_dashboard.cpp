// The dashboard's job list drawn from a board of 2,000 jobs (issue 35: under 100 ms of server time), and
// the rows alone (what an open page polls for).

#include <benchmark/benchmark.h>

#include "dashboard/pages.hpp"

namespace {

tandem::dashboard::Board board_of(int n) {
    tandem::dashboard::Board board;
    board.taken_at = 1'800'000'000;
    board.clusters = {"local", "lab", "k8s"};
    const char* clusters[] = {"local", "lab", "k8s"};
    for (int i = n; i > 0; --i) {
        tandem::app::JobView v;
        auto& r = v.record;
        r.id = i;
        r.name = "sweep-lr-" + std::to_string(i % 97) + "-seed-" + std::to_string(i);
        r.cluster = clusters[i % 3];
        r.backend = i % 3 == 0 ? "local" : (i % 3 == 1 ? "slurm" : "k8s");
        r.remote_id = std::to_string(100000 + i);
        r.state = i % 7 == 0 ? tandem::JobState::failed
                             : (i % 11 == 0 ? tandem::JobState::running : tandem::JobState::succeeded);
        r.reason = r.state == tandem::JobState::failed ? "exit code 1 <OOM?>" : "exit code 0";
        r.gpus = i % 2 == 0 ? "H100:8" : "";
        r.num_nodes = i % 5 == 0 ? 2 : 1;
        r.submitted_at = board.taken_at - 3600 - i;
        r.started_at = r.submitted_at + 30;
        if (r.state != tandem::JobState::running) {
            r.ended_at = r.submitted_at + 600;
        }
        board.jobs.push_back(std::move(v));
    }
    return board;
}

void BM_render_list(benchmark::State& state) {
    const auto board = board_of(static_cast<int>(state.range(0)));
    tandem::dashboard::PageContext ctx;
    ctx.now = board.taken_at + 10;
    std::size_t bytes = 0;
    for (auto _ : state) {
        auto html = tandem::dashboard::render_list(board, {}, ctx);
        bytes = html.size();
        benchmark::DoNotOptimize(html);
    }
    state.counters["page_kib"] = static_cast<double>(bytes) / 1024;
}
BENCHMARK(BM_render_list)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_render_rows_filtered(benchmark::State& state) {
    const auto board = board_of(static_cast<int>(state.range(0)));
    tandem::dashboard::PageContext ctx;
    ctx.now = board.taken_at + 10;
    for (auto _ : state) {
        auto html = tandem::dashboard::render_rows(board, {"FAILED", "lab", "seed"}, ctx);
        benchmark::DoNotOptimize(html);
    }
}
BENCHMARK(BM_render_rows_filtered)->Arg(2000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
