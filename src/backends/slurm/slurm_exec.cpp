#include "backends/slurm/slurm_exec.hpp"

#include <fmt/format.h>

#include "backends/slurm/slurm_cli.hpp"

namespace tandem::slurm {

Result<int> exec_beside_job(net::RemoteHost& host, const JobRecord& job,
                            const Result<std::optional<std::vector<std::string>>>& running_nodes,
                            const ExecRequest& request, ExecIo& io, const std::string& cluster) {
    if (!running_nodes) {
        return tl::unexpected(running_nodes.error());
    }
    if (!*running_nodes) {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("job {} is not running on cluster {}: nothing to run a command beside",
                                job.id, cluster));
    }
    const std::vector<std::string>& nodes = **running_nodes;
    if (request.node < 0 || static_cast<std::size_t>(request.node) >= nodes.size()) {
        return fail(ErrorKind::usage, fmt::format("--node {}: job {} runs on {} node(s), ranks 0..{}",
                                                  request.node, job.id, nodes.size(), nodes.size() - 1));
    }
    const std::string command = cli::srun_beside_command(
        job.remote_id, nodes[static_cast<std::size_t>(request.node)], request.tty, request.command);
    net::ExecStreams streams;
    streams.input_fd = io.input_fd;
    streams.out = io.out;
    streams.err = io.err;
    streams.interactive = true; // a command beside a job may be quiet for as long as it likes
    if (request.tty) {
        streams.pty = net::TerminalSize{io.size.columns, io.size.rows};
        streams.term = io.term;
        if (io.resized) {
            streams.resized = [&io]() -> std::optional<net::TerminalSize> {
                if (auto s = io.resized()) {
                    return net::TerminalSize{s->columns, s->rows};
                }
                return std::nullopt;
            };
        }
    }
    auto status = host.exec_streaming(command, streams);
    if (!status) {
        Error e = status.error();
        e.message = fmt::format("cluster {}: {}", cluster, e.message);
        return tl::unexpected(e);
    }
    return *status;
}

} // namespace tandem::slurm
