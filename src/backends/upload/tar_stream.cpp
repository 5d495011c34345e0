#include "backends/upload/tar_stream.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace tandem::upload {

namespace {

constexpr std::size_t k_block = 512;
constexpr std::size_t k_record = 20 * k_block;

// An octal field of `width` bytes: digits, then NUL. Sizes over 8 GiB do not fit 11 digits; such a
// file is over every upload limit long before, and the writer refuses it.
void octal(char* field, std::size_t width, std::uint64_t value) {
    std::string digits = fmt::format("{:0{}o}", value, width - 1);
    std::memcpy(field, digits.data(), std::min(digits.size(), width - 1));
    field[width - 1] = '\0';
}

bool split_ustar(std::string_view name, std::string_view& prefix, std::string_view& rest) {
    if (name.size() <= 100) {
        prefix = {};
        rest = name;
        return true;
    }
    // The prefix ends at a '/', holds at most 155 bytes; the rest at most 100.
    for (std::size_t slash = name.find('/'); slash != std::string_view::npos; slash = name.find('/', slash + 1)) {
        if (slash > 155) {
            break;
        }
        if (name.size() - slash - 1 <= 100 && slash > 0) {
            prefix = name.substr(0, slash);
            rest = name.substr(slash + 1);
            return !rest.empty();
        }
    }
    return false;
}

} // namespace

bool fits_ustar(std::string_view name) {
    std::string_view prefix, rest;
    return split_ustar(name, prefix, rest);
}

std::string ustar_header(std::string_view name, char type, std::uint64_t size, int mode, std::int64_t mtime) {
    std::string block(k_block, '\0');
    std::string_view prefix, rest;
    split_ustar(name, prefix, rest);
    std::memcpy(&block[0], rest.data(), std::min<std::size_t>(rest.size(), 100));
    octal(&block[100], 8, static_cast<std::uint64_t>(mode));
    octal(&block[108], 8, 0);  // uid
    octal(&block[116], 8, 0);  // gid
    octal(&block[124], 12, size);
    octal(&block[136], 12, static_cast<std::uint64_t>(std::max<std::int64_t>(mtime, 0)));
    std::memset(&block[148], ' ', 8); // the checksum counts its own field as spaces
    block[156] = type;
    std::memcpy(&block[257], "ustar", 6); // magic "ustar\0", version "00"
    block[263] = '0';
    block[264] = '0';
    std::memcpy(&block[345], prefix.data(), std::min<std::size_t>(prefix.size(), 155));
    unsigned sum = 0;
    for (unsigned char c : block) {
        sum += c;
    }
    std::string digits = fmt::format("{:06o}", sum);
    std::memcpy(&block[148], digits.data(), 6);
    block[154] = '\0';
    block[155] = ' ';
    return block;
}

std::string pax_record(std::string_view key, std::string_view value) {
    // The length prefix counts itself: grow it until the digits agree.
    const std::size_t body = key.size() + value.size() + 3; // ' ', '=', '\n'
    std::size_t len = body + 1;
    while (std::to_string(len).size() + body != len) {
        len = std::to_string(len).size() + body;
    }
    return fmt::format("{} {}={}\n", len, key, value);
}

namespace {

// The header block(s) of one entry: a pax record first when ustar cannot hold the name.
Result<std::string> headers(const TarEntry& e) {
    const char type = e.is_dir ? '5' : '0';
    const std::uint64_t size = e.is_dir ? 0 : e.size;
    const int mode = e.is_dir || e.executable ? 0755 : 0644;
    const std::string name = e.is_dir ? e.name + "/" : e.name;
    if (size > 077777777777ULL) {
        return fail(ErrorKind::invalid_spec, fmt::format("{} is over 8 GiB, too large to upload", e.local_path));
    }
    if (fits_ustar(name)) {
        return ustar_header(name, type, size, mode, e.mtime);
    }
    const std::string record = pax_record("path", name);
    std::string out = ustar_header("././@PaxHeader", 'x', record.size(), 0644, e.mtime);
    out += record;
    out.resize((out.size() + k_block - 1) / k_block * k_block, '\0');
    // The ustar name is a stand-in that readers replace with the pax path.
    out += ustar_header(std::string_view(name).substr(0, 99), type, size, mode, e.mtime);
    return out;
}

} // namespace

TarSource::~TarSource() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

Status TarSource::next_entry() {
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
    m_pending.clear();
    m_pending_at = 0;
    if (m_next == m_entries.size()) {
        if (!m_finished) {
            // The end-of-archive blocks, then zeros to a whole 10240-byte record (tar's default blocking):
            // GNU tar stops at the end of such a record without waiting for the stream's end, which an
            // exec over Kubernetes' v4 channel protocol cannot signal.
            const std::uint64_t total = m_served + 2 * k_block;
            m_pending.assign(2 * k_block + (k_record - total % k_record) % k_record, '\0');
            m_finished = true;
        }
        return {};
    }
    const TarEntry& e = m_entries[m_next++];
    auto h = headers(e);
    if (!h) {
        return tl::unexpected(h.error());
    }
    m_pending = std::move(*h);
    if (!e.is_dir) {
        m_fd = ::open(e.local_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (m_fd < 0) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("cannot read {}: {}", e.local_path, std::strerror(errno)));
        }
        m_file_left = e.size;
        m_pad = (k_block - e.size % k_block) % k_block;
    }
    return {};
}

Result<std::size_t> TarSource::read(char* buffer, std::size_t capacity) {
    std::size_t filled = 0;
    while (filled < capacity) {
        if (m_pending_at < m_pending.size()) {
            const std::size_t n = std::min(capacity - filled, m_pending.size() - m_pending_at);
            std::memcpy(buffer + filled, m_pending.data() + m_pending_at, n);
            m_pending_at += n;
            filled += n;
            m_served += n;
            continue;
        }
        if (m_file_left > 0) {
            const ssize_t n = ::read(m_fd, buffer + filled, std::min<std::uint64_t>(capacity - filled, m_file_left));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                const TarEntry& e = m_entries[m_next - 1];
                return fail(ErrorKind::invalid_spec,
                            fmt::format("{} changed while it was being sent (it is shorter than {} bytes now)",
                                        e.local_path, e.size));
            }
            filled += static_cast<std::size_t>(n);
            m_served += static_cast<std::uint64_t>(n);
            m_file_left -= static_cast<std::uint64_t>(n);
            m_content += static_cast<std::uint64_t>(n);
            continue;
        }
        if (m_pad > 0) {
            m_pending.assign(m_pad, '\0');
            m_pending_at = 0;
            m_pad = 0;
            continue;
        }
        if (m_finished && m_pending_at == m_pending.size()) {
            break;
        }
        if (auto ok = next_entry(); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    return filled;
}

} // namespace tandem::upload
