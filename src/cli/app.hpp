#pragma once

namespace tandem::cli {

// Parses the command line, runs the command, prints any error as `tandem: error: ...` on stderr, and
// returns the process exit code. main() is just this.
int run(int argc, char** argv);

} // namespace tandem::cli
