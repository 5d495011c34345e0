#include "sys/fault_point.hpp"

#include <csignal>
#include <cstdlib>
#include <string>

namespace tandem::sys {

void fault_point(std::string_view point) {
    static const std::string wanted = [] {
        const char* value = std::getenv("TANDEM_FAULT");
        return std::string(value != nullptr ? value : "");
    }();
    if (wanted.empty() || wanted.compare(0, point.size(), point) != 0) {
        return;
    }
    const std::string_view how = std::string_view(wanted).substr(point.size());
    if (how.empty()) {
        std::raise(SIGKILL);
    } else if (how == ":stop") {
        std::raise(SIGSTOP); // the test continues it (SIGCONT) once it has done what it wanted meanwhile
    }
}

} // namespace tandem::sys
