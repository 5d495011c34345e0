#pragma once
// Loads tests/fixtures/k8s/<file> as JSON (objects in the exact shapes a v1.20 API server returns) and
// picks items out of a List by name.

#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

inline nlohmann::json k8s_fixture(const std::string& file) {
    const std::string path = std::string(TANDEM_FIXTURES) + "/k8s/" + file;
    std::ifstream in(path);
    INFO(path);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str());
}

// A copy of the item of `list` named `name`.
inline nlohmann::json k8s_item(const nlohmann::json& list, const std::string& name) {
    for (const auto& item : list.at("items")) {
        if (item.at("metadata").at("name") == name) {
            return item;
        }
    }
    FAIL("no item named " << name);
    return {};
}
