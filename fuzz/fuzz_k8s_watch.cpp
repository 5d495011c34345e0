// A Kubernetes watch stream (newline-delimited JSON events) line by line through parse_watch_line, each
// event applied to a List with apply_watch_event (backends/k8s/watch_events.hpp), as k8s_watch.cpp does.
// Invariant: errors are one line.

#include "backends/k8s/watch_events.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tandem::k8s;
    auto stream = fuzz::text(data, size);
    nlohmann::json list = {
        {"kind", "JobList"}, {"metadata", {{"resourceVersion", "1"}}}, {"items", nlohmann::json::array()}};
    while (!stream.empty()) {
        const auto nl = stream.find('\n');
        const auto line = stream.substr(0, nl);
        stream = nl == std::string_view::npos ? std::string_view() : stream.substr(nl + 1);
        const auto event = parse_watch_line(line);
        fuzz::check_error_one_line(event, "parse_watch_line: error is one line");
        if (event) {
            apply_watch_event(list, *event);
        }
    }
    return 0;
}
