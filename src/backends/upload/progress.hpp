#pragma once
// The one progress line of an upload ("uploading workdir to k8s/prod: 12.0 MiB of 100.0 MiB, 85.3 MiB/s"),
// for a terminal only: the CLI sets a sink when stderr is one; without a sink nothing is made.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace tandem::upload {

void set_progress(std::function<void(const std::string& line, bool done)> sink);
bool progress_wanted();
void progress(const std::string& line, bool done);

// Rate-limited progress of one stream: note() at most five times a second, finish() once.
class ProgressLine {
public:
    ProgressLine(std::string what, std::uint64_t total) : m_what(std::move(what)), m_total(total) {}
    void note(std::uint64_t done_bytes);
    void finish(std::uint64_t done_bytes);

private:
    std::string line(std::uint64_t done_bytes) const;
    std::string m_what;
    std::uint64_t m_total;
    bool m_show = progress_wanted();
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point m_last = m_start;
};

} // namespace tandem::upload
