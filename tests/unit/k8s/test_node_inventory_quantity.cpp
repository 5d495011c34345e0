#include <catch2/catch.hpp>

#include "backends/k8s/node_inventory.hpp"

using tandem::k8s::parse_quantity;

TEST_CASE("quantity: plain, decimal and binary suffixes") {
    CHECK(parse_quantity("8") == 8.0);
    CHECK(parse_quantity("7500m") == Approx(7.5));
    CHECK(parse_quantity("100m") == Approx(0.1));
    CHECK(parse_quantity("16Gi") == 16.0 * 1024 * 1024 * 1024);
    CHECK(parse_quantity("32768000Ki") == 32768000.0 * 1024);
    CHECK(parse_quantity("256Mi") == 256.0 * 1024 * 1024);
    CHECK(parse_quantity("1Ti") == 1024.0 * 1024 * 1024 * 1024);
    CHECK(parse_quantity("1Pi") == 1024.0 * 1024 * 1024 * 1024 * 1024);
    CHECK(parse_quantity("1Ei") == 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024);
    CHECK(parse_quantity("100k") == 1e5);
    CHECK(parse_quantity("1.5M") == 1.5e6);
    CHECK(parse_quantity("2G") == 2e9);
    CHECK(parse_quantity("3T") == 3e12);
    CHECK(parse_quantity("1P") == 1e15);
    CHECK(parse_quantity("500u") == Approx(5e-4));
    CHECK(parse_quantity("250n") == Approx(2.5e-7));
    CHECK(parse_quantity("468118132371") == 468118132371.0);
}

TEST_CASE("quantity: E is exa, e/E followed by a number is an exponent") {
    CHECK(parse_quantity("1E") == 1e18);
    CHECK(parse_quantity("1e3") == 1000.0);
    CHECK(parse_quantity("1E3") == 1000.0);
    CHECK(parse_quantity("129e6") == 129e6);
    CHECK(parse_quantity("5e-3") == Approx(0.005));
    CHECK(parse_quantity("2e+2") == 200.0);
}

TEST_CASE("quantity: signs and decimal points") {
    CHECK(parse_quantity("0.5") == 0.5);
    CHECK(parse_quantity(".5") == 0.5);
    CHECK(parse_quantity("1.") == 1.0);
    CHECK(parse_quantity("+2") == 2.0);
    CHECK(parse_quantity("-1Gi") == -1024.0 * 1024 * 1024);
    CHECK(parse_quantity("0") == 0.0);
}

TEST_CASE("quantity: text that is not a quantity") {
    for (const char* bad :
         {"", "Gi", "abc", "1GB", "1gi", "1 Gi", "1.2.3", "1e", "1e1.5", "1x", "--1", ".", "+", "1Mi "}) {
        INFO(bad);
        CHECK_FALSE(parse_quantity(bad));
    }
}
