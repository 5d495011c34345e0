#include "backends/upload/progress.hpp"

#include <mutex>

#include <fmt/format.h>

#include "backends/upload/upload_set.hpp"

namespace tandem::upload {

namespace {

std::mutex g_mutex;
std::function<void(const std::string&, bool)> g_sink;

} // namespace

void set_progress(std::function<void(const std::string& line, bool done)> sink) {
    std::lock_guard lock(g_mutex);
    g_sink = std::move(sink);
}

bool progress_wanted() {
    std::lock_guard lock(g_mutex);
    return static_cast<bool>(g_sink);
}

void progress(const std::string& line, bool done) {
    std::lock_guard lock(g_mutex);
    if (g_sink) {
        g_sink(line, done);
    }
}

std::string ProgressLine::line(std::uint64_t done_bytes) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    return fmt::format("uploading {}: {} of {}, {:.1f} MiB/s", m_what, mib(done_bytes), mib(m_total),
                       seconds > 0 ? static_cast<double>(done_bytes) / (1024.0 * 1024.0) / seconds : 0.0);
}

void ProgressLine::note(std::uint64_t done_bytes) {
    const auto now = std::chrono::steady_clock::now();
    if (m_show && now - m_last > std::chrono::milliseconds(200)) {
        m_last = now;
        progress(line(done_bytes), false);
    }
}

void ProgressLine::finish(std::uint64_t done_bytes) {
    if (m_show) {
        progress(line(done_bytes), true);
    }
}

Result<std::size_t> TarFeed::read(char* buffer, std::size_t capacity) {
    auto n = m_tar.read(buffer, capacity);
    if (n) {
        m_wire += *n;
        m_line.note(m_tar.content_bytes());
    }
    return n;
}

} // namespace tandem::upload
