#pragma once
// tandem on a real pseudo-terminal (`tandem shell`): what a user at a terminal would see and type.

#include <chrono>
#include <string>
#include <vector>

#include "run_tandem.hpp"

namespace tandem_test {

struct PtyResult {
    int exit_code = -1;  // -1: still running at the limit (then killed)
    std::string screen;  // every byte the terminal showed
};

// Starts tandem `args` on a new terminal of `columns` x `rows` with `env`, types `input`, and reads the
// terminal until tandem exits or `limit` passes.
PtyResult run_in_pty(const EnvOverrides& env, const std::vector<std::string>& args, int columns, int rows,
                     const std::string& input, std::chrono::seconds limit = std::chrono::seconds(60));

} // namespace tandem_test
