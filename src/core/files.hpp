#pragma once
// What core needs of the file system, handed in by its caller (LoadOptions::files, load_config): core
// itself opens no file. sys::real_files() is the real one; tests may hand in their own.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace tandem {

enum class PathKind { missing, file, directory, other };

struct PathInfo {
    std::string path; // absolute and normalised (as std::filesystem::weakly_canonical makes it)
    PathKind kind = PathKind::missing;
};

struct FileAccess {
    // The whole file, refused when larger than `limit` bytes; nullopt when it does not exist.
    std::function<Result<std::optional<std::string>>(const std::string& path, std::size_t limit)> read;
    // What is at `path` (already absolute).
    std::function<PathInfo(const std::string& path)> inspect;
};

// A local path as the user wrote it: `~` and `~/...` are `home`'s, a relative path is `base_dir`'s. Pure.
std::string expand_local_path(const std::string& written, const std::string& home,
                              const std::string& base_dir);

// The largest task or config file read (a hostile file cannot make tandem read gigabytes).
inline constexpr std::size_t k_max_input_file = std::size_t{16} * 1024 * 1024;

} // namespace tandem
