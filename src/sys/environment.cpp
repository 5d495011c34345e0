#include "sys/environment.hpp"

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

namespace tandem::sys {

std::optional<std::string> getenv(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v == nullptr ? std::nullopt : std::optional<std::string>(v);
}

std::string current_dir() {
    std::error_code ec;
    return std::filesystem::current_path(ec).string();
}

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) {
        return {};
    }
    return name;
}

} // namespace tandem::sys
