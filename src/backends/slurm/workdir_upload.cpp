#include "backends/slurm/workdir_upload.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "backends/slurm/gitignore.hpp"
#include "backends/slurm/submit_plan.hpp"

namespace tandem::slurm {

namespace fs = std::filesystem;

namespace {

std::string mib(std::uint64_t bytes) {
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

struct Walk {
    fs::path root;
    std::uint64_t limit = 0;
    std::uint64_t total = 0;
    std::vector<WorkdirEntry> entries;
    GitIgnore rules;

    Status folder(const fs::path& dir, const std::string& rel) {
        std::error_code ec;
        if (std::ifstream in(dir / ".gitignore"); in) {
            std::ostringstream text;
            text << in.rdbuf();
            rules.add(text.str(), rel);
        }
        std::vector<fs::directory_entry> children;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            children.push_back(*it);
        }
        if (ec) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("workdir: cannot list {}: {}", dir.string(), ec.message()));
        }
        std::sort(children.begin(), children.end(),
                  [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
        for (const auto& child : children) {
            const std::string name = child.path().filename().string();
            const std::string child_rel = rel.empty() ? name : rel + "/" + name;
            const auto status = fs::status(child.path(), ec); // follows links
            if (ec) {
                continue; // a dangling link
            }
            const bool is_dir = fs::is_directory(status);
            if (name == ".git" || rules.ignored(child_rel, is_dir)) {
                continue;
            }
            if (is_dir) {
                if (fs::is_symlink(child.symlink_status(ec))) {
                    continue;
                }
                entries.push_back(WorkdirEntry{child_rel, true, 0, false});
                if (auto ok = folder(child.path(), child_rel); !ok) {
                    return ok;
                }
            } else if (fs::is_regular_file(status)) {
                const auto size = fs::file_size(child.path(), ec);
                const bool exec = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
                total += ec ? 0 : size;
                entries.push_back(WorkdirEntry{child_rel, false, ec ? 0 : size, exec});
                if (total > limit) {
                    return fail(ErrorKind::invalid_spec,
                                fmt::format("workdir {} is over {} after .gitignore (the limit is {}; {} "
                                            "reached it)",
                                            root.string(), mib(total), mib(limit), child_rel),
                                "add large files to .gitignore, or raise the cluster's workdir_limit_mb");
                }
            }
        }
        return {};
    }
};

} // namespace

Result<std::vector<WorkdirEntry>> workdir_manifest(const std::string& local_dir, std::uint64_t limit_bytes) {
    Walk walk;
    walk.root = local_dir;
    walk.limit = limit_bytes;
    std::error_code ec;
    if (!fs::is_directory(local_dir, ec)) {
        return fail(ErrorKind::invalid_spec, fmt::format("workdir {} is not a folder", local_dir));
    }
    if (auto ok = walk.folder(walk.root, ""); !ok) {
        return tl::unexpected(ok.error());
    }
    return std::move(walk.entries);
}

Result<std::size_t> upload_workdir(net::RemoteHost& host, const std::string& local_dir,
                                   const std::string& remote_dir, std::uint64_t limit_bytes) {
    auto entries = workdir_manifest(local_dir, limit_bytes);
    if (!entries) {
        return tl::unexpected(entries.error());
    }
    if (auto ok = host.make_dirs(remote_dir); !ok) {
        return tl::unexpected(ok.error());
    }
    std::size_t files = 0;
    for (const auto& e : *entries) {
        const std::string target = remote_dir + "/" + e.relative;
        if (e.is_dir) {
            if (auto ok = host.make_dirs(target); !ok) {
                return tl::unexpected(ok.error());
            }
            continue;
        }
        std::ifstream in(fs::path(local_dir) / e.relative, std::ios::binary);
        if (!in) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("workdir: cannot read {}/{}", local_dir, e.relative));
        }
        std::ostringstream data;
        data << in.rdbuf();
        if (auto ok = host.write(target, data.str(), e.executable ? 0755 : 0644); !ok) {
            return tl::unexpected(ok.error());
        }
        ++files;
    }
    return files;
}

Result<TaskSpec> with_uploaded_workdir(net::RemoteHost* host, const TaskSpec& spec, const std::string& home,
                                       std::uint64_t limit_bytes, const std::string& cluster) {
    if (host == nullptr || !spec.workdir) {
        return spec;
    }
    const std::string remote = fmt::format("{}/.tandem/workdirs/{}", home, random_submit_token());
    auto sent = upload_workdir(*host, *spec.workdir, remote, limit_bytes);
    if (!sent) {
        Error e = sent.error();
        e.message = fmt::format("cluster {}: {}", cluster, e.message);
        return tl::unexpected(e);
    }
    TaskSpec copy = spec;
    copy.workdir = remote;
    return copy;
}

} // namespace tandem::slurm
