#include "sys/fault_point.hpp"

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <string>

namespace tandem::sys {

namespace {

// TANDEM_FAULT=<point>[#<n>][:stop], read once.
struct Wanted {
    std::string point;
    int occurrence = 1;
    bool stop = false;
};

Wanted parse_wanted() {
    Wanted w;
    const char* value = std::getenv("TANDEM_FAULT");
    std::string text = value != nullptr ? value : "";
    if (text.size() > 5 && text.compare(text.size() - 5, 5, ":stop") == 0) {
        w.stop = true;
        text.resize(text.size() - 5);
    }
    if (const auto hash = text.find('#'); hash != std::string::npos) {
        int n = 0;
        const char* first = text.data() + hash + 1;
        const char* last = text.data() + text.size();
        if (auto [p, ec] = std::from_chars(first, last, n); ec == std::errc() && p == last && n > 0) {
            w.occurrence = n;
        }
        text.resize(hash);
    }
    w.point = std::move(text);
    return w;
}

} // namespace

void fault_point(std::string_view point) {
    static const Wanted wanted = parse_wanted();
    static std::atomic<int> reached{0};
    if (wanted.point.empty() || point != wanted.point) {
        return;
    }
    if (reached.fetch_add(1) + 1 != wanted.occurrence) {
        return;
    }
    std::raise(wanted.stop ? SIGSTOP : SIGKILL); // SIGSTOP: the test continues it (SIGCONT) when it is done
}

} // namespace tandem::sys
