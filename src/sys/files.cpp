#include "sys/files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace tandem::sys {

namespace {

Result<std::optional<std::string>> read_file(const std::string& path, std::size_t limit) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
        return std::optional<std::string>();
    }
    if (fs::is_directory(status)) {
        return fail(ErrorKind::config, "it is a directory");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return fail(ErrorKind::config, std::strerror(errno));
    }
    std::string text;
    char buffer[64 * 1024];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        text.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (text.size() > limit) {
            return fail(ErrorKind::config, fmt::format("larger than {} MiB", limit / (1024 * 1024)));
        }
    }
    return std::optional<std::string>(std::move(text));
}

PathInfo inspect(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    PathInfo info;
    const fs::path canonical = fs::weakly_canonical(path, ec);
    if (ec) {
        return info;
    }
    info.path = canonical.string();
    const auto status = fs::status(canonical, ec);
    if (ec || !fs::exists(status)) {
        return info;
    }
    info.kind = fs::is_directory(status)      ? PathKind::directory
                : fs::is_regular_file(status) ? PathKind::file
                                              : PathKind::other;
    return info;
}

} // namespace

FileAccess real_files() {
    return FileAccess{read_file, inspect};
}

} // namespace tandem::sys
