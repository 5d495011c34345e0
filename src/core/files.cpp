#include "core/files.hpp"

#include <algorithm>
#include <filesystem>

namespace tandem {

std::string expand_local_path(const std::string& written, const std::string& home,
                              const std::string& base_dir) {
    std::filesystem::path p(written); // path arithmetic only: nothing here touches the file system
    if (written == "~" || written.rfind("~/", 0) == 0) {
        p = std::filesystem::path(home.empty() ? "/" : home) /
            written.substr(std::min<std::size_t>(2, written.size()));
    } else if (p.is_relative()) {
        p = std::filesystem::path(base_dir) / p;
    }
    return p.string();
}

} // namespace tandem
