#pragma once
// Internal to kubeconfig loading: reading one entry's body (a cluster, user or context mapping) while
// keeping its first problem as one formatted line.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "backends/k8s/kubeconfig_data.hpp"
#include "backends/k8s/kubeconfig_entries.hpp"
#include "core/spec_loader.hpp"

namespace tandem::k8s::detail {

inline SourceLoc loc_of(const std::string& file, const YAML::Mark& m) {
    return m.line < 0 ? SourceLoc{file, 1, 1} : SourceLoc{file, m.line + 1, m.column + 1};
}

// Where relative paths of one file resolve, and how its positions are written.
struct FileInfo {
    std::string path;
    std::filesystem::path dir;

    std::string resolve(const std::string& p) const {
        if (p.empty() || std::filesystem::path(p).is_absolute()) {
            return p;
        }
        return (dir / p).lexically_normal().string();
    }
};

// Reads the body of one cluster/user/context entry, keeping its first problem.
class EntryReader {
public:
    EntryReader(const FileInfo& file, std::string prefix, std::optional<EntryProblem>& problem)
        : m_file(file), m_prefix(std::move(prefix)), m_problem(problem) {}

    std::string field(const std::string& key) const { return key.empty() ? m_prefix : m_prefix + "." + key; }

    void problem(const YAML::Node& at, const std::string& key, const std::string& message,
                 std::string hint = {}) {
        if (!m_problem) {
            m_problem = EntryProblem{format_diagnostic({loc_of(m_file.path, at.Mark()), field(key), message}),
                                     std::move(hint)};
        }
    }

    // A string field; null is empty. Values are never echoed (any of them may be a credential).
    std::optional<std::string> string(const YAML::Node& node, const std::string& key) {
        if (node.IsNull()) {
            return std::string();
        }
        if (!node.IsScalar()) {
            problem(node, key, fmt::format("must be a string, not a {}", kind_name(node)));
            return std::nullopt;
        }
        return node.Scalar();
    }

    bool boolean(const YAML::Node& node, const std::string& key) {
        if (node.IsNull()) {
            return false;
        }
        bool value = false;
        if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
            problem(node, key, "must be true or false");
        }
        return value;
    }

    // A *-data field: base64 of PEM text.
    std::string pem_data(const YAML::Node& node, const std::string& key) {
        auto text = string(node, key);
        if (!text || text->empty()) {
            return {};
        }
        auto decoded = base64_decode(*text);
        if (!decoded) {
            problem(node, key, "is not valid base64");
            return {};
        }
        if (!looks_like_pem(*decoded)) {
            problem(node, key, "does not decode to PEM (no '-----BEGIN' line)");
            return {};
        }
        return *decoded;
    }

    // A file path field: resolved against the kubeconfig's folder, and checked readable now so the
    // failure names the kubeconfig line rather than surfacing later as a TLS error.
    std::string readable_file(const YAML::Node& node, const std::string& key) {
        auto text = string(node, key);
        if (!text || text->empty()) {
            return {};
        }
        std::string path = m_file.resolve(*text);
        if (::access(path.c_str(), R_OK) != 0) {
            problem(node, key, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
            return {};
        }
        return path;
    }

    const FileInfo& file() const { return m_file; }

    // An unknown key: ignored, unless it is a near miss of a known one.
    void unknown(const YAML::Node& key_node, const std::string& key,
                 const std::vector<std::string_view>& known) {
        if (auto near = closest_match(key, known)) {
            problem(key_node, key, fmt::format("unknown field (did you mean '{}'?)", *near));
        }
    }

    static std::string kind_name(const YAML::Node& node) {
        return node.IsSequence() ? "list" : node.IsMap() ? "mapping" : "scalar";
    }

private:
    const FileInfo& m_file;
    std::string m_prefix;
    std::optional<EntryProblem>& m_problem;
};

// The bodies of clusters[].cluster, users[].user (with its exec) and contexts[].context.
void read_cluster(EntryReader& r, YAML::Node body, ClusterEntry& c);
void read_user(EntryReader& r, YAML::Node body, UserEntry& u);
void read_context(EntryReader& r, YAML::Node body, ContextEntry& c);

} // namespace tandem::k8s::detail
