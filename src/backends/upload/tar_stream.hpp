#pragma once
// A POSIX tar (ustar, with pax `path` records for names over ustar's limits) served as a stream: bytes
// are made as the transport asks for them, so a 100 MB workdir never sits in memory. GNU tar, busybox tar and
// Python's tarfile read it. Only what uploads need: folders and regular files, modes 0755/0644, no owners
// (the extracting user owns what it unpacks), each file's mtime kept.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace tandem::upload {

struct TarEntry {
    std::string name;       // '/'-separated, relative
    bool is_dir = false;
    std::string local_path; // a file's bytes come from here
    std::uint64_t size = 0;
    bool executable = false;
    std::int64_t mtime = 0;
};

// Serves the archive of `entries` piece by piece, reading each file only when its turn comes: the
// transport pulls (an SSH channel's window, a WebSocket frame) as fast as it can send.
class TarSource {
public:
    explicit TarSource(std::vector<TarEntry> entries) : m_entries(std::move(entries)) {}
    ~TarSource();
    TarSource(const TarSource&) = delete;
    TarSource& operator=(const TarSource&) = delete;

    // Up to `capacity` bytes of the archive; 0 at its end. A file that cannot be read, or is shorter now
    // than when it was listed, is an error naming it (the archive would be corrupt).
    Result<std::size_t> read(char* buffer, std::size_t capacity);
    // File content bytes served so far (for progress lines).
    std::uint64_t content_bytes() const { return m_content; }

private:
    Status next_entry();

    std::vector<TarEntry> m_entries;
    std::size_t m_next = 0;
    std::string m_pending; // header or padding bytes not yet served
    std::size_t m_pending_at = 0;
    int m_fd = -1;
    std::uint64_t m_file_left = 0;
    std::uint64_t m_pad = 0;
    std::uint64_t m_content = 0;
    bool m_finished = false;
    std::uint64_t m_served = 0; // archive bytes served (the last record is padded to a whole one)
};

// The 512-byte ustar header block (exposed for unit tests). `name` must fit ustar (see fits_ustar).
std::string ustar_header(std::string_view name, char type, std::uint64_t size, int mode, std::int64_t mtime);
// Whether ustar's 100-byte name (+155-byte prefix split at a '/') can hold `name`.
bool fits_ustar(std::string_view name);
// A pax extended-header record: "<len> <key>=<value>\n", where <len> counts the whole record.
std::string pax_record(std::string_view key, std::string_view value);

} // namespace tandem::upload
