// One thread per cluster, each with a deadline: the slowest decides the time, a hung one is left behind.

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <catch2/catch.hpp>

#include "app/fanout.hpp"

using namespace std::chrono_literals;
using tandem::app::FanoutTask;
using tandem::app::run_fanout;

TEST_CASE("fan-out runs every task at once and waits for all") {
    auto count = std::make_shared<std::atomic<int>>(0);
    std::vector<FanoutTask> tasks;
    for (int i = 0; i < 4; ++i) {
        tasks.push_back(FanoutTask{[count] {
                                       std::this_thread::sleep_for(200ms);
                                       ++*count;
                                   },
                                   5s});
    }
    const auto start = std::chrono::steady_clock::now();
    const auto finished = run_fanout(std::move(tasks));
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(finished == std::vector<bool>{true, true, true, true});
    CHECK(*count == 4);
    CHECK(took < 700ms); // concurrent: about one task's time, not four
}

TEST_CASE("fan-out leaves a task behind at its deadline and reports the others") {
    auto release = std::make_shared<std::atomic<bool>>(false);
    auto fast_done = std::make_shared<std::atomic<bool>>(false);
    std::vector<FanoutTask> tasks;
    tasks.push_back(FanoutTask{[fast_done] { *fast_done = true; }, 5s});
    tasks.push_back(FanoutTask{[release] {
                                   while (!*release) {
                                       std::this_thread::sleep_for(10ms);
                                   }
                               },
                               300ms});
    const auto start = std::chrono::steady_clock::now();
    const auto finished = run_fanout(std::move(tasks));
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(finished == std::vector<bool>{true, false});
    CHECK(*fast_done);
    CHECK(took >= 300ms);
    CHECK(took < 3s);
    *release = true; // let the thread end before the process does
    std::this_thread::sleep_for(50ms);
}
