#include "core/quantity.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace tandem {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return s;
}

// A finite decimal number, nothing else around it.
tl::expected<double, std::string> parse_number(std::string_view text) {
    text = trim(text);
    double value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() || !std::isfinite(value)) {
        return tl::unexpected(fmt::format("'{}' is not a number", text));
    }
    return value;
}

bool valid_accelerator_name(std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

// Splits "64GB+" into number, unit and the trailing '+'.
struct SizeParts {
    std::string_view number;
    std::string unit;
    bool at_least = false;
};

SizeParts split_size(std::string_view text) {
    SizeParts parts;
    text = trim(text);
    if (!text.empty() && text.back() == '+') {
        parts.at_least = true;
        text.remove_suffix(1);
    }
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
        ++i;
    }
    parts.number = text.substr(0, i);
    parts.unit = lower(trim(text.substr(i)));
    return parts;
}

tl::expected<double, std::string> size_in_gb(std::string_view text, bool allow_plus, bool* at_least) {
    auto parts = split_size(text);
    if (parts.at_least && !allow_plus) {
        return tl::unexpected(fmt::format("'{}': '+' is not allowed here", text));
    }
    auto number = parse_number(parts.number);
    if (!number) {
        return tl::unexpected(fmt::format("'{}' is not a size (expected e.g. 64, 64+, 64GB, 512MB)", text));
    }
    double scale = 0;
    const std::string& u = parts.unit;
    if (u.empty() || u == "g" || u == "gb" || u == "gib") {
        scale = 1;
    } else if (u == "m" || u == "mb" || u == "mib") {
        scale = 1.0 / 1024;
    } else if (u == "k" || u == "kb" || u == "kib") {
        scale = 1.0 / (1024 * 1024);
    } else if (u == "t" || u == "tb" || u == "tib") {
        scale = 1024;
    } else {
        return tl::unexpected(fmt::format("'{}': unknown unit '{}' (use MB, GB or TB)", text, parts.unit));
    }
    if (*number <= 0) {
        return tl::unexpected(fmt::format("'{}' must be positive", text));
    }
    if (at_least != nullptr) {
        *at_least = parts.at_least;
    }
    return *number * scale;
}

} // namespace

std::string format_number(double value) {
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        return fmt::format("{}", static_cast<long long>(value));
    }
    return fmt::format("{}", value);
}

tl::expected<double, std::string> parse_accelerator_count(std::string_view text) {
    auto n = parse_number(text);
    if (!n) {
        return tl::unexpected(fmt::format("accelerator count '{}' is not a number", trim(text)));
    }
    if (*n <= 0) {
        return tl::unexpected(fmt::format("accelerator count must be positive, got {}", trim(text)));
    }
    if (*n > 1 && *n != std::floor(*n)) {
        return tl::unexpected(
            fmt::format("accelerator count {} must be a whole number or a fraction below 1", trim(text)));
    }
    if (*n > 4096) {
        return tl::unexpected(fmt::format("accelerator count {} is too large", trim(text)));
    }
    return *n;
}

tl::expected<Accelerator, std::string> parse_accelerator(std::string_view text) {
    text = trim(text);
    Accelerator acc;
    auto colon = text.find(':');
    std::string_view name = colon == std::string_view::npos ? text : text.substr(0, colon);
    if (!valid_accelerator_name(name)) {
        return tl::unexpected(
            fmt::format("'{}' is not an accelerator (expected NAME or NAME:COUNT, e.g. H100:8)", text));
    }
    acc.name = std::string(name);
    if (colon != std::string_view::npos) {
        auto count_text = text.substr(colon + 1);
        if (count_text.find(':') != std::string_view::npos) {
            return tl::unexpected(fmt::format("'{}' has more than one ':' (expected NAME:COUNT)", text));
        }
        auto count = parse_accelerator_count(count_text);
        if (!count) {
            return tl::unexpected(count.error());
        }
        acc.count = *count;
    }
    return acc;
}

tl::expected<Quantity, std::string> parse_cpus(std::string_view text) {
    text = trim(text);
    Quantity q;
    if (!text.empty() && text.back() == '+') {
        q.at_least = true;
        text.remove_suffix(1);
    }
    auto n = parse_number(text);
    if (!n) {
        return tl::unexpected(fmt::format("'{}' is not a CPU count (expected e.g. 4 or 4+)", text));
    }
    if (*n <= 0) {
        return tl::unexpected(fmt::format("CPU count must be positive, got {}", text));
    }
    q.value = *n;
    return q;
}

tl::expected<Quantity, std::string> parse_memory_gb(std::string_view text) {
    Quantity q;
    auto gb = size_in_gb(text, true, &q.at_least);
    if (!gb) {
        return tl::unexpected(gb.error());
    }
    q.value = *gb;
    return q;
}

tl::expected<double, std::string> parse_disk_gb(std::string_view text) {
    return size_in_gb(text, false, nullptr);
}

tl::expected<int, std::string> parse_positive_int(std::string_view text) {
    text = trim(text);
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) {
        return tl::unexpected(fmt::format("'{}' is not a whole number", text));
    }
    if (value <= 0) {
        return tl::unexpected(fmt::format("must be at least 1, got {}", value));
    }
    return value;
}

tl::expected<int, std::string> parse_slurm_time_minutes(std::string_view text) {
    text = trim(text);
    auto bad = [&] {
        return tl::unexpected(fmt::format(
            "'{}' is not a Slurm time (use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)", text));
    };
    long days = 0;
    std::string_view rest = text;
    bool has_days = false;
    if (auto dash = text.find('-'); dash != std::string_view::npos) {
        auto d = parse_positive_int(text.substr(0, dash));
        if (!d && text.substr(0, dash) != "0") {
            return bad();
        }
        days = d ? *d : 0;
        rest = text.substr(dash + 1);
        has_days = true;
    }
    std::vector<long> parts;
    while (true) {
        auto colon = rest.find(':');
        auto piece = rest.substr(0, colon);
        long v = 0;
        auto [ptr, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v);
        if (piece.empty() || ec != std::errc{} || ptr != piece.data() + piece.size() || v < 0) {
            return bad();
        }
        parts.push_back(v);
        if (colon == std::string_view::npos) {
            break;
        }
        rest = rest.substr(colon + 1);
    }
    if (parts.size() > 3) {
        return bad();
    }
    // Any field (or the days) this large is over a year on its own; checked first so the sums below
    // cannot overflow.
    constexpr long k_year_seconds = 365L * 24 * 3600;
    if (days > 365 || std::any_of(parts.begin(), parts.end(), [](long p) { return p > k_year_seconds; })) {
        return tl::unexpected(fmt::format("time limit '{}' is longer than a year", text));
    }
    long seconds = 0;
    if (has_days) { // D-HH, D-HH:MM, D-HH:MM:SS
        long h = parts[0];
        long m = parts.size() > 1 ? parts[1] : 0;
        long s = parts.size() > 2 ? parts[2] : 0;
        seconds = ((days * 24 + h) * 60 + m) * 60 + s;
    } else if (parts.size() == 1) { // MM
        seconds = parts[0] * 60;
    } else if (parts.size() == 2) { // MM:SS
        seconds = parts[0] * 60 + parts[1];
    } else { // HH:MM:SS
        seconds = (parts[0] * 60 + parts[1]) * 60 + parts[2];
    }
    if (seconds <= 0) {
        return tl::unexpected(fmt::format("time limit '{}' must be positive", text));
    }
    if (seconds > 365L * 24 * 3600) {
        return tl::unexpected(fmt::format("time limit '{}' is longer than a year", text));
    }
    return static_cast<int>((seconds + 59) / 60);
}

std::string format_slurm_time(int minutes) {
    int days = minutes / (24 * 60);
    int hours = (minutes / 60) % 24;
    int mins = minutes % 60;
    if (days == 0) {
        return fmt::format("{:02}:{:02}:00", hours, mins);
    }
    return fmt::format("{}-{:02}:{:02}:00", days, hours, mins);
}

tl::expected<std::string, std::string> parse_port_range(std::string_view text) {
    text = trim(text);
    auto port = [](std::string_view p) -> tl::expected<int, std::string> {
        auto v = parse_positive_int(p);
        if (!v || *v > 65535) {
            return tl::unexpected(fmt::format("'{}' is not a port (1-65535)", p));
        }
        return *v;
    };
    auto dash = text.find('-');
    if (dash == std::string_view::npos) {
        auto p = port(text);
        if (!p) {
            return tl::unexpected(p.error());
        }
        return std::to_string(*p);
    }
    auto lo = port(text.substr(0, dash));
    auto hi = port(text.substr(dash + 1));
    if (!lo) {
        return tl::unexpected(lo.error());
    }
    if (!hi) {
        return tl::unexpected(hi.error());
    }
    if (*lo > *hi) {
        return tl::unexpected(fmt::format("port range '{}' is backwards", text));
    }
    return fmt::format("{}-{}", *lo, *hi);
}

tl::expected<InfraPin, std::string> parse_infra(std::string_view text) {
    text = trim(text);
    InfraPin pin;
    auto slash = text.find('/');
    std::string kind = lower(text.substr(0, slash));
    std::string_view rest = slash == std::string_view::npos ? std::string_view{} : text.substr(slash + 1);
    if (slash != std::string_view::npos && rest.empty()) {
        return tl::unexpected(fmt::format("infra '{}' ends with '/'", text));
    }
    if (kind == "k8s" || kind == "kubernetes") {
        pin.kind = "k8s";
        pin.cluster = std::string(rest); // a context name may itself contain '/'
    } else if (kind == "slurm") {
        pin.kind = "slurm";
        auto s2 = rest.find('/');
        pin.cluster = std::string(rest.substr(0, s2));
        if (s2 != std::string_view::npos) {
            pin.pool = std::string(rest.substr(s2 + 1));
            if (pin.pool.empty() || pin.pool.find('/') != std::string::npos) {
                return tl::unexpected(fmt::format("infra '{}': expected slurm/CLUSTER/PARTITION", text));
            }
        }
    } else if (kind == "local") {
        if (!rest.empty()) {
            return tl::unexpected(fmt::format("infra '{}': local takes no cluster", text));
        }
        pin.kind = "local";
    } else if (kind.empty()) {
        return tl::unexpected(std::string("infra is empty"));
    } else {
        return tl::unexpected(fmt::format(
            "infra '{}' is not supported: tandem runs on k8s[/CONTEXT], slurm[/CLUSTER[/PARTITION]] or local",
            text));
    }
    return pin;
}

std::string format_infra(const InfraPin& pin) {
    std::string out = pin.kind;
    if (!pin.cluster.empty()) {
        out += "/" + pin.cluster;
    }
    if (!pin.pool.empty()) {
        out += "/" + pin.pool;
    }
    return out;
}

std::string format_accelerator(const Accelerator& acc) {
    return acc.name + ":" + format_number(acc.count);
}

tl::expected<std::int64_t, std::string> parse_duration_seconds(std::string_view text) {
    const std::string bad =
        fmt::format("'{}' is not a duration (use e.g. 90s, 30m, 2h, 1h30m; a bare number is seconds)", text);
    if (text.empty()) {
        return tl::unexpected(bad);
    }
    std::int64_t total = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        std::int64_t n = 0;
        const std::size_t digits_start = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
            if (n > 1'000'000'000) {
                return tl::unexpected(bad);
            }
            n = n * 10 + (text[i++] - '0');
        }
        if (i == digits_start) {
            return tl::unexpected(bad);
        }
        std::int64_t unit = 1;
        if (i < text.size()) {
            switch (text[i++]) {
            case 's':
                unit = 1;
                break;
            case 'm':
                unit = 60;
                break;
            case 'h':
                unit = 3600;
                break;
            case 'd':
                unit = 86400;
                break;
            default:
                return tl::unexpected(bad);
            }
        } else if (digits_start != 0) {
            return tl::unexpected(bad); // "1h30": the last number needs its unit
        }
        total += n * unit;
    }
    if (total <= 0) {
        return tl::unexpected(bad);
    }
    return total;
}

std::string human_duration(std::int64_t seconds) {
    if (seconds < 0) {
        seconds = 0;
    }
    if (seconds < 120) {
        return fmt::format("{}s", seconds);
    }
    std::int64_t minutes = seconds / 60;
    if (minutes < 10) {
        return seconds % 60 == 0 ? fmt::format("{}m", minutes) : fmt::format("{}m{}s", minutes, seconds % 60);
    }
    if (minutes < 180) {
        return fmt::format("{}m", minutes);
    }
    std::int64_t hours = minutes / 60;
    if (hours < 48) {
        return minutes % 60 == 0 ? fmt::format("{}h", hours) : fmt::format("{}h{}m", hours, minutes % 60);
    }
    std::int64_t days = hours / 24;
    if (days < 8) {
        return hours % 24 == 0 ? fmt::format("{}d", days) : fmt::format("{}d{}h", days, hours % 24);
    }
    return days < 365 * 2 ? fmt::format("{}d", days) : fmt::format("{}y", days / 365);
}

} // namespace tandem
