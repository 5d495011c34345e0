#include "backends/slurm/group_channel.hpp"

#include <fmt/format.h>

#include "backends/slurm/hostlist.hpp"
#include "backends/slurm/script_quoting.hpp"
#include "core/job_group.hpp"

namespace tandem::slurm {

Result<std::optional<std::vector<std::string>>> running_hosts(const std::vector<SlurmJob>& jobs,
                                                              const std::string& slurm_id,
                                                              const std::string& cluster) {
    for (const auto& j : jobs) {
        if (j.job_id != slurm_id) {
            continue;
        }
        if (j.state != "RUNNING" || j.nodes.empty()) {
            return std::optional<std::vector<std::string>>();
        }
        auto hosts = expand_hostlist(j.nodes, 4096);
        if (!hosts) {
            return tl::unexpected(hosts.error());
        }
        for (const auto& h : *hosts) {
            if (!valid_address(h)) {
                return fail(ErrorKind::remote,
                            fmt::format("cluster {}: job {} runs on a node whose name is not a host name", cluster,
                                        slurm_id));
            }
        }
        return std::optional<std::vector<std::string>>(std::move(*hosts));
    }
    return std::optional<std::vector<std::string>>();
}

Status publish_book(net::RemoteHost& host, const std::string& home, const std::string& channel,
                    const std::string& book, const std::string& cluster) {
    const std::string dir = home + "/.tandem/groups";
    const std::string final_path = fmt::format("{}/{}.env", dir, channel);
    const std::string tmp_path = final_path + ".tmp";
    if (auto ok = host.make_dirs(dir); !ok) {
        return ok;
    }
    if (auto ok = host.write(tmp_path, book, 0600); !ok) {
        return ok;
    }
    auto moved = host.exec(fmt::format("mv -f {} {}", shell_quote(tmp_path), shell_quote(final_path)));
    if (!moved) {
        return tl::unexpected(moved.error());
    }
    if (moved->exit_status != 0) {
        return fail(ErrorKind::remote, fmt::format("cluster {}: cannot put the group's addresses in place "
                                                   "({}): mv exited {}",
                                                   cluster, final_path, moved->exit_status));
    }
    return {};
}

Status unpublish_book(net::RemoteHost& host, const std::string& home, const std::string& channel,
                      const std::string& cluster) {
    const std::string path = fmt::format("{}/.tandem/groups/{}.env", home, channel);
    auto removed = host.exec("rm -f " + shell_quote(path));
    if (!removed) {
        return tl::unexpected(removed.error());
    }
    if (removed->exit_status != 0) {
        return fail(ErrorKind::remote,
                    fmt::format("cluster {}: cannot remove {}: rm exited {}", cluster, path, removed->exit_status));
    }
    return {};
}

} // namespace tandem::slurm
