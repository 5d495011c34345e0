#pragma once
// The one progress line of an upload ("uploading workdir to k8s/prod: 12.0 MiB of 100.0 MiB, 85.3 MiB/s"),
// for a terminal only: the CLI sets a sink when stderr is one; without a sink nothing is made.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/upload/tar_stream.hpp"

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

// A tar stream as a transport pulls it (an SSH channel, an exec's stdin), with its progress line and the
// archive bytes it gave; finish() ends the line.
class TarFeed {
public:
    TarFeed(std::vector<TarEntry> entries, std::string what, std::uint64_t content_bytes)
        : m_tar(std::move(entries)), m_line(std::move(what), content_bytes) {}
    Result<std::size_t> read(char* buffer, std::size_t capacity);
    void finish() { m_line.finish(m_tar.content_bytes()); }
    std::uint64_t wire_bytes() const { return m_wire; }

private:
    TarSource m_tar;
    ProgressLine m_line;
    std::uint64_t m_wire = 0;
};

// The first 4 KiB of what a remote command wrote to stderr, for its error line.
struct ErrorText {
    std::string text;
    void append(std::string_view bytes) {
        if (text.size() < 4096) {
            text.append(bytes.substr(0, 4096 - text.size()));
        }
    }
};

} // namespace tandem::upload
