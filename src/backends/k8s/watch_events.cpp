#include "backends/k8s/watch_events.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "backends/k8s/job_state_pods.hpp"
#include "backends/k8s/json_fields.hpp"

namespace tandem::k8s {

namespace {

constexpr std::size_t k_quote_limit = 80;
constexpr std::array<std::string_view, 5> k_types{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

std::string quote_prefix(std::string_view line) {
    std::string out;
    for (char c : line.substr(0, k_quote_limit)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
    if (line.size() > k_quote_limit) {
        out += "...";
    }
    return "'" + out + "'";
}

tl::unexpected<Error> malformed(std::string_view what, std::string_view line) {
    return fail(ErrorKind::remote,
                fmt::format("Kubernetes watch: malformed event ({}): {}", what, quote_prefix(line)));
}

ErrorKind kind_of_status(int code) {
    if (code == 401 || code == 403) {
        return ErrorKind::unauthorized;
    }
    if (code == 404) {
        return ErrorKind::not_found;
    }
    if (code == 504) {
        return ErrorKind::timeout;
    }
    if (code == 429 || code >= 500) {
        return ErrorKind::unavailable;
    }
    return ErrorKind::remote;
}

} // namespace

Result<WatchEvent> parse_watch_line(std::string_view line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) {
        line.remove_suffix(1);
    }
    if (line.empty()) {
        return malformed("empty line", line);
    }
    auto doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        return malformed("not a JSON object", line);
    }
    WatchEvent ev;
    ev.type = fields::str_at(doc, "type");
    bool known = false;
    for (auto t : k_types) {
        known = known || ev.type == t;
    }
    if (!known) {
        return malformed(
            ev.type.empty() ? std::string("no type") : "unknown type " + detail::one_line(ev.type), line);
    }
    auto object = doc.find("object");
    if (object == doc.end() || !object->is_object()) {
        return malformed("no object", line);
    }
    ev.object = std::move(*object);
    if (ev.type != "ERROR") {
        return ev;
    }
    const auto* code_field = fields::get(&ev.object, "code");
    const int code = code_field != nullptr && code_field->is_number_integer() ? code_field->get<int>() : 0;
    if (code == 410) {
        ev.gone = true;
        return ev;
    }
    const std::string reason = detail::one_line(fields::str_at(ev.object, "reason"));
    const std::string message = detail::one_line(fields::str_at(ev.object, "message"));
    return fail(kind_of_status(code),
                fmt::format("Kubernetes watch: the API server ended the watch with {} {}: {}", code,
                            reason.empty() ? "Error" : reason, message.empty() ? "(no message)" : message));
}

void apply_watch_event(nlohmann::json& list, const WatchEvent& event) {
    if (event.type == "ERROR" || !list.is_object()) {
        return;
    }
    if (const auto rv = fields::str_at(event.object, "metadata", "resourceVersion"); !rv.empty()) {
        list["metadata"]["resourceVersion"] = rv;
    }
    if (event.type == "BOOKMARK") {
        return;
    }
    auto& items = list["items"];
    if (!items.is_array()) {
        items = nlohmann::json::array();
    }
    const auto uid = fields::str_at(event.object, "metadata", "uid");
    const auto name = fields::str_at(event.object, "metadata", "name");
    auto same = [&](const nlohmann::json& item) {
        return uid.empty() ? fields::str_at(item, "metadata", "name") == name
                           : fields::str_at(item, "metadata", "uid") == uid;
    };
    auto it = std::find_if(items.begin(), items.end(), same);
    if (event.type == "DELETED") {
        if (it != items.end()) {
            items.erase(it);
        }
    } else if (it != items.end()) {
        *it = event.object;
    } else {
        items.push_back(event.object);
    }
}

} // namespace tandem::k8s
