#pragma once
// Loads tests/fixtures/slurm/<version>/<file> as JSON.

#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

inline nlohmann::json slurm_fixture(const std::string& version, const std::string& file) {
    const std::string path = std::string(TANDEM_FIXTURES) + "/slurm/" + version + "/" + file;
    std::ifstream in(path);
    INFO(path);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str());
}
