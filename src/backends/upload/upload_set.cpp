#include "backends/upload/upload_set.hpp"

#include <ctime>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>
#include <xxhash.h>

#include "backends/upload/gitignore.hpp"

namespace tandem::upload {

namespace fs = std::filesystem;

std::string mib(std::uint64_t bytes) {
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::optional<std::string> local_mount_source(const nlohmann::json& value) {
    if (!value.is_string()) {
        return std::nullopt; // a storage object: {source, name, store, mode}
    }
    const auto text = value.get<std::string>();
    if (text.find("://") != std::string::npos) {
        return std::nullopt; // s3://, gs://, r2://, https://, cos://, oci://, ...
    }
    return text;
}

namespace {

std::int64_t mtime_of(const fs::path& p) {
    std::error_code ec;
    const auto t = fs::last_write_time(p, ec);
    if (ec) {
        return 0;
    }
    const auto sys = std::chrono::file_clock::to_sys(t);
    return std::chrono::duration_cast<std::chrono::seconds>(sys.time_since_epoch()).count();
}

class Hasher {
public:
    Hasher() : m_state(XXH3_createState()) { XXH3_128bits_reset(m_state); }
    ~Hasher() { XXH3_freeState(m_state); }
    Hasher(const Hasher&) = delete;
    Hasher& operator=(const Hasher&) = delete;

    void add(std::string_view bytes) { XXH3_128bits_update(m_state, bytes.data(), bytes.size()); }
    // A record that cannot run into the next: kind, mode, size, name length, name.
    void item(const Item& item) {
        add(fmt::format("{}{} {} {}:", item.is_dir ? 'd' : 'f', item.executable ? 'x' : '-', item.size,
                        item.relative.size()));
        add(item.relative);
    }
    Status content(const std::string& path, std::uint64_t size) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return fail(ErrorKind::invalid_spec, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
        }
        static thread_local std::string buf(256 * 1024, '\0');
        std::uint64_t seen = 0;
        for (;;) {
            const ssize_t n = ::read(fd, buf.data(), buf.size());
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            add(std::string_view(buf.data(), static_cast<std::size_t>(n)));
            seen += static_cast<std::uint64_t>(n);
        }
        ::close(fd);
        if (seen != size) {
            return fail(ErrorKind::invalid_spec, fmt::format("{} changed while it was being read", path));
        }
        return {};
    }
    std::string hex() const {
        const XXH128_hash_t h = XXH3_128bits_digest(m_state);
        return fmt::format("{:016x}{:016x}", h.high64, h.low64);
    }

private:
    XXH3_state_t* m_state;
};

struct Scan {
    std::uint64_t limit = 0;
    std::uint64_t total = 0; // across every unit

    Status over_limit(const std::string& what, const std::string& crossed) const {
        return fail(ErrorKind::invalid_spec,
                    fmt::format("{}: {} to upload in all, over the limit (the limit is {}; {} reached it)", what,
                                mib(total), mib(limit), crossed),
                    "add large files to .gitignore (workdir), send fewer files, or raise the cluster's "
                    "workdir_limit_mb");
    }

    Status add_file(Unit& unit, const fs::path& path, const std::string& rel, const fs::file_status& st) {
        std::error_code ec;
        const auto size = fs::file_size(path, ec);
        if (ec) {
            return fail(ErrorKind::invalid_spec, fmt::format("{}: cannot read {}: {}", unit.label, path.string(),
                                                             ec.message()));
        }
        const bool exec = (st.permissions() & fs::perms::owner_exec) != fs::perms::none;
        total += size;
        unit.bytes += size;
        unit.items.push_back(Item{rel, false, size, exec, mtime_of(path)});
        if (total > limit) {
            return over_limit(unit.label + " " + unit.local, path.string());
        }
        return {};
    }

    Status folder(Unit& unit, const fs::path& dir, const std::string& rel, GitIgnore* rules) {
        std::error_code ec;
        if (rules) {
            if (std::ifstream in(dir / ".gitignore"); in) {
                std::ostringstream text;
                text << in.rdbuf();
                rules->add(text.str(), rel);
            }
        }
        std::vector<fs::directory_entry> children;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            children.push_back(*it);
        }
        if (ec) {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: cannot list {}: {}", unit.label, dir.string(), ec.message()));
        }
        std::sort(children.begin(), children.end(),
                  [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
        for (const auto& child : children) {
            const std::string name = child.path().filename().string();
            const std::string child_rel = rel.empty() ? name : rel + "/" + name;
            const auto st = fs::status(child.path(), ec); // follows links
            if (ec) {
                continue; // a dangling link
            }
            const bool is_dir = fs::is_directory(st);
            if (rules && (name == ".git" || rules->ignored(child_rel, is_dir))) {
                continue;
            }
            if (is_dir) {
                if (fs::is_symlink(child.symlink_status(ec))) {
                    continue;
                }
                unit.items.push_back(Item{child_rel, true, 0, true, mtime_of(child.path())});
                if (auto ok = folder(unit, child.path(), child_rel, rules); !ok) {
                    return ok;
                }
            } else if (fs::is_regular_file(st)) {
                if (auto ok = add_file(unit, child.path(), child_rel, st); !ok) {
                    return ok;
                }
            }
        }
        return {};
    }

    Result<Unit> unit(const std::string& label, const std::string& local, bool workdir) {
        Unit u;
        u.label = label;
        u.local = local;
        std::error_code ec;
        const auto st = fs::status(local, ec);
        if (ec || !fs::exists(st)) {
            return fail(ErrorKind::invalid_spec, fmt::format("{}: {} does not exist", label, local));
        }
        if (fs::is_directory(st)) {
            GitIgnore rules;
            if (auto ok = folder(u, local, "", workdir ? &rules : nullptr); !ok) {
                return tl::unexpected(ok.error());
            }
        } else if (fs::is_regular_file(st) && !workdir) {
            u.single_file = true;
            if (auto ok = add_file(u, local, fs::path(local).filename().string(), st); !ok) {
                return tl::unexpected(ok.error());
            }
        } else {
            return fail(ErrorKind::invalid_spec,
                        fmt::format("{}: {} is not a {}", label, local, workdir ? "folder" : "file or folder"));
        }
        Hasher h;
        h.add(u.single_file ? "file\n" : "folder\n");
        for (const auto& item : u.items) {
            h.item(item);
            if (!item.is_dir) {
                const std::string path = u.single_file ? local : (fs::path(local) / item.relative).string();
                if (auto ok = h.content(path, item.size); !ok) {
                    return tl::unexpected(ok.error());
                }
            }
        }
        u.hash = h.hex();
        return u;
    }
};

} // namespace

Result<UploadSet> scan_uploads(const TaskSpec& spec, std::uint64_t limit_bytes) {
    UploadSet set;
    Scan scan;
    scan.limit = limit_bytes;
    if (spec.workdir) {
        auto u = scan.unit("workdir", *spec.workdir, true);
        if (!u) {
            return tl::unexpected(u.error());
        }
        set.workdir = 0;
        set.units.push_back(std::move(*u));
    }
    for (const auto& [destination, value] : spec.file_mounts) {
        auto source = local_mount_source(value);
        if (!source) {
            continue;
        }
        auto u = scan.unit("file_mounts." + destination, *source, false);
        if (!u) {
            return tl::unexpected(u.error());
        }
        // The same content twice (one folder mounted at two places) is one unit.
        auto same = std::find_if(set.units.begin(), set.units.end(), [&](const Unit& other) {
            return other.hash == u->hash && other.single_file == u->single_file &&
                   (!u->single_file || other.items.front().relative == u->items.front().relative);
        });
        if (same == set.units.end()) {
            set.units.push_back(std::move(*u));
            same = std::prev(set.units.end());
        } else {
            scan.total -= u->bytes; // sent once
        }
        set.mounts.push_back(Mount{destination, static_cast<std::size_t>(same - set.units.begin())});
    }
    set.bytes = scan.total;
    return set;
}

std::vector<TarEntry> tar_entries(const Unit& unit) {
    std::vector<TarEntry> out;
    out.reserve(unit.items.size());
    for (const auto& item : unit.items) {
        TarEntry e;
        e.name = item.relative;
        e.is_dir = item.is_dir;
        e.size = item.size;
        e.executable = item.executable;
        e.mtime = item.mtime;
        if (!item.is_dir) {
            e.local_path = unit.single_file ? unit.local : (fs::path(unit.local) / item.relative).string();
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<TarEntry> tar_entries_under(const Unit& unit, const std::string& prefix, const std::string& file_name) {
    std::vector<TarEntry> out;
    out.reserve(unit.items.size() + 1);
    TarEntry root;
    root.name = prefix;
    root.is_dir = true;
    root.mtime = static_cast<std::int64_t>(std::time(nullptr));
    out.push_back(std::move(root));
    for (auto& e : tar_entries(unit)) {
        e.name = prefix + "/" + (unit.single_file && !file_name.empty() ? file_name : e.name);
        out.push_back(std::move(e));
    }
    return out;
}

} // namespace tandem::upload
