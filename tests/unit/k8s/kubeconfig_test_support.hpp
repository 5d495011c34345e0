#pragma once
// Helpers for the kubeconfig tests: a temporary folder removed at the end, files written into it, and a
// GetEnv built from a map.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <sys/stat.h>

#include "core/config.hpp"

namespace tandem::k8s::test {

inline const std::string k_fixtures = std::string(TANDEM_FIXTURES) + "/k8s/kubeconfig";

class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "tandem-kubeconfig-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        m_path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return m_path; }

    // Writes `text` to path()/name (creating folders) and returns the full path.
    std::string write(const std::string& name, const std::string& text, mode_t mode = 0644) const {
        const auto full = std::filesystem::path(m_path) / name;
        std::filesystem::create_directories(full.parent_path());
        {
            std::ofstream out(full, std::ios::binary | std::ios::trunc);
            out << text;
        }
        ::chmod(full.c_str(), mode);
        return full.string();
    }

private:
    std::string m_path;
};

inline GetEnv env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it == vars.end()) {
            return std::nullopt;
        }
        return it->second;
    };
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace tandem::k8s::test
