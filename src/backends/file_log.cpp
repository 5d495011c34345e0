#include "backends/file_log.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace tandem::backends {

std::uintmax_t tail_offset(const std::string& file, int lines) {
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    std::streamoff size = in.tellg();
    if (size <= 0 || lines <= 0) {
        return lines <= 0 ? static_cast<std::uintmax_t>(std::max<std::streamoff>(size, 0)) : 0;
    }
    // Walk back from the end in chunks; a final newline does not start a new line.
    std::streamoff pos = size;
    int seen = 0;
    const std::streamoff chunk = 4096;
    std::string buf;
    while (pos > 0) {
        std::streamoff start = std::max<std::streamoff>(0, pos - chunk);
        buf.resize(static_cast<std::size_t>(pos - start));
        in.seekg(start);
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        for (std::streamoff i = pos - start - 1; i >= 0; --i) {
            if (buf[static_cast<std::size_t>(i)] == '\n' && start + i != size - 1 && ++seen == lines) {
                return static_cast<std::uintmax_t>(start + i + 1);
            }
        }
        pos = start;
    }
    return 0;
}

Status stream_file(const std::string& file, const LogOptions& options, const LogSink& sink,
                   const std::function<bool()>& ended, std::chrono::milliseconds poll) {
    std::ifstream in(file, std::ios::binary);
    if (!in && !options.follow) {
        return fail(ErrorKind::not_found, fmt::format("no output file yet ({})", file));
    }
    std::uintmax_t offset = 0;
    if (in && options.tail_lines) {
        offset = tail_offset(file, *options.tail_lines);
    }
    std::string buffer(64 * 1024, '\0');
    // Returns false when the reader went away.
    auto drain = [&]() -> bool {
        if (!in.is_open()) {
            in.open(file, std::ios::binary);
            if (!in) {
                return true;
            }
        }
        in.clear();
        // A file shorter than what was read has been replaced (a requeued job starts its output anew).
        std::error_code ec;
        if (auto size = std::filesystem::file_size(file, ec); !ec && size < offset) {
            offset = 0;
            in.close();
            in.open(file, std::ios::binary);
        }
        in.seekg(static_cast<std::streamoff>(offset));
        while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
            auto n = static_cast<std::size_t>(in.gcount());
            offset += n;
            if (!sink(std::string_view(buffer.data(), n))) {
                return false;
            }
        }
        return true;
    };
    if (!drain()) {
        return {};
    }
    while (options.follow) {
        // Look at the job before the file: what it wrote before it ended is then surely in the file.
        const bool over = ended();
        if (!drain() || over) {
            break;
        }
        std::this_thread::sleep_for(poll);
    }
    return {};
}

} // namespace tandem::backends
