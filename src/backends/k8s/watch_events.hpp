#pragma once
// One line of a Kubernetes watch stream (GET ...?watch=true&resourceVersion=RV): the API server sends
// newline-delimited JSON events {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}.
// An ERROR event carries a Status object; code 410 (Gone/Expired: the resourceVersion is too old) means
// "list again and watch from the new list's resourceVersion", reported as `gone`. Any other ERROR is
// returned as an Error classified by its code.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tandem::k8s {

struct WatchEvent {
    std::string type;      // ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
    nlohmann::json object; // the Job/pod (or the Status of an ERROR)
    bool gone = false;     // ERROR with code 410: re-list, then watch again
};

// A malformed line is an ErrorKind::remote error quoting a prefix of the line.
Result<WatchEvent> parse_watch_line(std::string_view line);

// Keeps a List (as a list call returned it) in step with a watch: ADDED and MODIFIED replace the item with
// the same metadata.uid (name when there is no uid) or append it; DELETED removes it. Every event but
// ERROR moves the list's metadata.resourceVersion to the object's: the next watch resumes from there.
// An ERROR changes nothing (when `gone`, list again). Pointers into the list's items (JobView) are
// invalid afterwards: group again.
void apply_watch_event(nlohmann::json& list, const WatchEvent& event);

} // namespace tandem::k8s
