#include "core/job_recovery.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

namespace tandem {

std::vector<RecoveryEvent> parse_recoveries(std::string_view text) {
    std::vector<RecoveryEvent> out;
    while (!text.empty() && out.size() < k_max_recovery_events) {
        const auto comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (item.empty()) {
            continue;
        }
        RecoveryEvent e;
        if (item == "n") {
            e.kind = RecoveryEvent::Kind::node_failure;
        } else if (item == "e") {
            e.kind = RecoveryEvent::Kind::disruption;
        } else if ((item[0] == 'x' || item[0] == 'c') && item.size() >= 2 && item.size() <= 4) {
            int code = -1;
            auto [end, ec] = std::from_chars(item.data() + 1, item.data() + item.size(), code);
            if (ec != std::errc() || end != item.data() + item.size() || code < 0 || code > 255) {
                continue;
            }
            e.kind = item[0] == 'x' ? RecoveryEvent::Kind::exit_code : RecoveryEvent::Kind::recover_code;
            e.code = code;
        } else {
            continue;
        }
        out.push_back(e);
    }
    return out;
}

std::string format_recoveries(const std::vector<RecoveryEvent>& events) {
    std::string out;
    for (const auto& e : events) {
        if (!out.empty()) {
            out += ',';
        }
        switch (e.kind) {
        case RecoveryEvent::Kind::exit_code: out += fmt::format("x{}", e.code); break;
        case RecoveryEvent::Kind::recover_code: out += fmt::format("c{}", e.code); break;
        case RecoveryEvent::Kind::node_failure: out += 'n'; break;
        case RecoveryEvent::Kind::disruption: out += 'e'; break;
        }
    }
    return out;
}

std::string describe(const RecoveryEvent& e) {
    switch (e.kind) {
    case RecoveryEvent::Kind::exit_code: return fmt::format("exit code {}", e.code);
    case RecoveryEvent::Kind::recover_code: return fmt::format("exit code {} (recover_on_exit_codes)", e.code);
    case RecoveryEvent::Kind::node_failure: return "node failure, requeued";
    case RecoveryEvent::Kind::disruption: return "evicted";
    }
    return "?";
}

std::string recoveries_summary(std::string_view text) {
    const auto events = parse_recoveries(text);
    if (events.empty()) {
        return {};
    }
    std::string out = fmt::format("{} {} (", events.size(), events.size() == 1 ? "recovery" : "recoveries");
    for (std::size_t i = 0; i < events.size(); ++i) {
        out += (i == 0 ? "" : "; ") + describe(events[i]);
    }
    return out + ")";
}

std::string format_exit_codes(const std::vector<int>& codes) {
    std::string out;
    for (int c : codes) {
        out += (out.empty() ? "" : ",") + std::to_string(c);
    }
    return out;
}

std::vector<int> parse_exit_codes(std::string_view text) {
    std::vector<int> out;
    while (!text.empty() && out.size() < 255) {
        const auto comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        int code = 0;
        auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), code);
        if (ec == std::errc() && end == item.data() + item.size() && code >= 1 && code <= 255) {
            out.push_back(code);
        }
    }
    return out;
}

std::string merge_recoveries(std::string_view stored, std::string_view seen) {
    auto known = parse_recoveries(stored);
    std::map<std::string, int> left; // how many of each event the stored list still accounts for
    for (const auto& e : known) {
        ++left[format_recoveries({e})];
    }
    for (const auto& e : parse_recoveries(seen)) {
        if (known.size() >= k_max_recovery_events) {
            break;
        }
        if (int& n = left[format_recoveries({e})]; n > 0) {
            --n;
        } else {
            known.push_back(e);
        }
    }
    return format_recoveries(known);
}

} // namespace tandem
