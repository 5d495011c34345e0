// RFC 3339 times as the API server writes them (job_state.hpp's parse_rfc3339).

#include <cctype>
#include <charconv>

#include "backends/k8s/job_state.hpp"

namespace tandem::k8s {

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
    // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
    auto num = [&](std::size_t at, std::size_t len) -> std::optional<int> {
        if (at + len > s.size()) {
            return std::nullopt;
        }
        for (std::size_t i = at; i < at + len; ++i) {
            if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
                return std::nullopt;
            }
        }
        int v = 0;
        std::from_chars(s.data() + at, s.data() + at + len, v); // digits only, checked above
        return v;
    };
    auto sep = [&](std::size_t at, std::string_view any) {
        return at < s.size() && any.find(s[at]) != any.npos;
    };
    const auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
               sec = num(17, 2);
    if (!y || !mo || !d || !h || !mi || !sec || !sep(4, "-") || !sep(7, "-") || !sep(10, "Tt ") ||
        !sep(13, ":") || !sep(16, ":") || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
        *sec > 60) {
        return std::nullopt;
    }
    std::size_t at = 19;
    if (sep(at, ".")) {
        ++at;
        const std::size_t digits = at;
        while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) {
            ++at;
        }
        if (at == digits) {
            return std::nullopt;
        }
    }
    std::int64_t offset = 0;
    if (sep(at, "Zz") && at + 1 == s.size()) {
        offset = 0;
    } else if (sep(at, "+-") && at + 6 == s.size() && sep(at + 3, ":")) {
        const auto oh = num(at + 1, 2), om = num(at + 4, 2);
        if (!oh || !om || *oh > 23 || *om > 59) {
            return std::nullopt;
        }
        offset = (*oh * 3600 + *om * 60) * (s[at] == '-' ? -1 : 1);
    } else {
        return std::nullopt;
    }
    // Days from 1970-01-01 to the civil date (H. Hinnant's days_from_civil).
    const int yy = *y - (*mo <= 2 ? 1 : 0);
    const int era = (yy >= 0 ? yy : yy - 399) / 400;
    const int yoe = yy - era * 400;
    const int doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + doe - 719468;
    return days * 86400 + *h * 3600 + *mi * 60 + *sec - offset;
}

} // namespace tandem::k8s
