// The manifests as YAML documents (`tandem plan`, `--dry-run` output), emitted from their JSON.

#include <yaml-cpp/yaml.h>

#include "backends/k8s/manifests.hpp"

namespace tandem::k8s {

using nlohmann::json;

namespace {

void emit(YAML::Emitter& out, const json& j) {
    if (j.is_object()) {
        out << YAML::BeginMap;
        for (const auto& [k, v] : j.items()) {
            out << YAML::Key << k << YAML::Value;
            emit(out, v);
        }
        out << YAML::EndMap;
    } else if (j.is_array()) {
        out << YAML::BeginSeq;
        for (const auto& v : j) {
            emit(out, v);
        }
        out << YAML::EndSeq;
    } else if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        if (s.find('\n') != std::string::npos) {
            out << YAML::Literal << s;
        } else {
            out << YAML::DoubleQuoted << s;
        }
    } else if (j.is_null()) {
        out << YAML::Null;
    } else {
        out << j.dump(); // numbers and booleans print as JSON does
    }
}

} // namespace

std::string to_yaml_documents(const std::vector<const json*>& docs) {
    std::string out;
    for (const auto* doc : docs) {
        YAML::Emitter e;
        emit(e, *doc);
        out += "---\n";
        out += e.c_str();
        out += '\n';
    }
    return out;
}

std::string to_yaml(const Manifests& manifests) {
    std::vector<const json*> docs;
    if (manifests.secret) {
        docs.push_back(&*manifests.secret);
    }
    for (const auto& j : manifests.jobs) {
        docs.push_back(&j);
    }
    if (manifests.service) {
        docs.push_back(&*manifests.service);
    }
    return to_yaml_documents(docs);
}

} // namespace tandem::k8s
