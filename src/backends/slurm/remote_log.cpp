#include "backends/slurm/remote_log.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "backends/slurm/rank_output.hpp"

namespace tandem::slurm {

namespace {

constexpr std::uint64_t k_chunk = 1024 * 1024;

// Offset where the last `lines` lines begin, reading backwards in chunks.
Result<std::uint64_t> tail_offset(net::RemoteHost& host, const std::string& path, std::uint64_t size,
                                  int lines) {
    if (lines <= 0) {
        return size;
    }
    std::uint64_t pos = size;
    int seen = 0;
    while (pos > 0) {
        const std::uint64_t start = pos > 65536 ? pos - 65536 : 0;
        auto data = host.read(path, start, pos - start);
        if (!data) {
            return tl::unexpected(data.error());
        }
        if (!*data) {
            return std::uint64_t{0};
        }
        const std::string& buf = **data;
        for (std::size_t i = buf.size(); i-- > 0;) {
            if (buf[i] == '\n' && start + i != size - 1 && ++seen == lines) {
                return start + i + 1;
            }
        }
        pos = start;
    }
    return std::uint64_t{0};
}

bool is_connection_error(const Error& e) {
    return e.kind == ErrorKind::unavailable || e.kind == ErrorKind::timeout;
}

} // namespace

Status stream_remote_log(net::RemoteHost& host, const RemoteLogTarget& target, const LogOptions& options,
                         const LogSink& sink, const std::function<Result<bool>()>& ended,
                         std::chrono::milliseconds poll) {
    RankOutput shown(target.num_nodes, options.node);
    std::uint64_t offset = 0;
    bool positioned = !options.tail_lines;
    bool reader_gone = false;

    auto lost = [&](const Error& e) {
        return fail(
            e.kind,
            fmt::format("cluster {}: lost the connection while reading job {}'s output ({})", target.cluster,
                        target.job_id, e.message),
            fmt::format("`tandem logs {} -f` picks up again once the cluster answers", target.job_id));
    };
    // Reads what is new. Returns false once the reader went away.
    auto drain = [&]() -> Status {
        auto info = host.stat(target.path);
        if (!info) {
            return tl::unexpected(info.error());
        }
        if (!*info) {
            return {};
        }
        if (!positioned) {
            auto at = tail_offset(host, target.path, (*info)->size, *options.tail_lines);
            if (!at) {
                return tl::unexpected(at.error());
            }
            offset = *at;
            positioned = true;
        }
        if ((*info)->size < offset) {
            offset = 0; // replaced by a shorter file
        }
        while (offset < (*info)->size) {
            auto data = host.read(target.path, offset, std::min(k_chunk, (*info)->size - offset));
            if (!data) {
                return tl::unexpected(data.error());
            }
            if (!*data || (*data)->empty()) {
                break;
            }
            offset += (*data)->size();
            if (!sink(shown.feed(**data))) {
                reader_gone = true;
                return {};
            }
        }
        return {};
    };

    if (!options.follow) {
        auto info = host.stat(target.path);
        if (!info) {
            return tl::unexpected(info.error());
        }
        if (!*info) {
            return fail(ErrorKind::not_found,
                        fmt::format("cluster {}: job {} has no output file yet ({})", target.cluster,
                                    target.job_id, target.path),
                        "a pending job writes nothing; `tandem logs -f` waits for it");
        }
        if (auto ok = drain(); !ok) {
            return ok;
        }
        if (!reader_gone) {
            sink(shown.finish());
        }
        return {};
    }

    int failures = 0;
    while (!reader_gone) {
        // Look at the job before the file: what it wrote before it ended is then surely in the file.
        auto over = ended();
        Status step = over ? drain() : Status(tl::unexpected(over.error()));
        if (step && over && *over) {
            break;
        }
        if (!step) {
            if (!is_connection_error(step.error())) {
                Error e = step.error();
                e.message = fmt::format("cluster {}: {}", target.cluster, e.message);
                return tl::unexpected(e);
            }
            if (++failures > 4) {
                return lost(step.error());
            }
            // Back off 0.5, 1, 2, 4 s, then try a fresh connection; the offset carries on.
            std::this_thread::sleep_for(std::chrono::milliseconds(500 << (failures - 1)));
            (void)host.reconnect(); // a failure shows in the next round's call
            continue;
        }
        failures = 0;
        std::this_thread::sleep_for(poll);
    }
    if (!reader_gone) {
        sink(shown.finish());
    }
    return {};
}

} // namespace tandem::slurm
