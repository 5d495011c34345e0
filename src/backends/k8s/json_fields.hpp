#pragma once
// Null-safe reads of Kubernetes objects for the pure mappers: a missing or mistyped field reads as
// absent instead of throwing, because the API server omits empty fields and versions differ.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tandem::k8s::fields {

// j[key] when j is an object holding key, else nullptr.
inline const nlohmann::json* get(const nlohmann::json* j, std::string_view key) {
    if (j == nullptr || !j->is_object()) {
        return nullptr;
    }
    auto it = j->find(key);
    return it == j->end() ? nullptr : &*it;
}

// j[k1][k2]...: get() along a path.
template <typename... Keys> const nlohmann::json* at(const nlohmann::json& j, Keys... keys) {
    const nlohmann::json* p = &j;
    ((p = get(p, keys)), ...);
    return p;
}

inline std::string str(const nlohmann::json* j) {
    return j != nullptr && j->is_string() ? j->get<std::string>() : std::string();
}

template <typename... Keys> std::string str_at(const nlohmann::json& j, Keys... keys) {
    return str(at(j, keys...));
}

// The items of a List object (or of a bare array); empty when neither.
inline const nlohmann::json& items(const nlohmann::json& list) {
    static const nlohmann::json empty = nlohmann::json::array();
    if (list.is_array()) {
        return list;
    }
    const nlohmann::json* it = get(&list, "items");
    return it != nullptr && it->is_array() ? *it : empty;
}

} // namespace tandem::k8s::fields
