#include "cli/app.hpp"

int main(int argc, char** argv) {
    return tandem::cli::run(argc, argv);
}
