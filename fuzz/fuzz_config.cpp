// config.yaml through parse_config (core/config.hpp). Invariant: the error lists every problem as
// "config.yaml:line:col: ..." lines, so every line of its message starts with the file name.

#include <string>

#include "core/config.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto config = tandem::parse_config(std::string(fuzz::text(data, size)), "config.yaml");
    if (!config) {
        const std::string& message = config.error().message;
        fuzz::check(config.error().kind == tandem::ErrorKind::config, "parse_config: a config error",
                    message);
        fuzz::check_lines_start_with(message,
                                     "config.yaml:", "every line of a config error names config.yaml:");
    }
    return 0;
}
