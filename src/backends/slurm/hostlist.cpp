// Slurm hostlist expansion. Slurm itself (src/common/hostlist.c) allows several bracket groups in one
// name and comma lists of numbers and ranges inside a group; it has no step syntax.

#include "backends/slurm/hostlist.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "backends/slurm/rest_json.hpp"

namespace tandem::slurm {

namespace {

tl::unexpected<Error> bad(std::string_view hostlist, std::string_view why) {
    // One line, also when slurmrestd's text holds a line break: `why` may quote a piece of the list too.
    return fail(ErrorKind::remote,
                rest::one_line(fmt::format("slurm: cannot read host list '{}': {}", hostlist, why)));
}

// Top-level names are separated by commas outside brackets.
Result<std::vector<std::string_view>> split_names(std::string_view list) {
    std::vector<std::string_view> out;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const char c = list[i];
        if (c == '[') {
            if (++depth > 1) {
                return bad(list, "nested '['");
            }
        } else if (c == ']') {
            if (--depth < 0) {
                return bad(list, "']' without '['");
            }
        } else if ((c == ',' || c == ' ') && depth == 0) {
            if (i > start) {
                out.push_back(list.substr(start, i - start));
            }
            start = i + 1;
        }
    }
    if (depth != 0) {
        return bad(list, "unclosed '['");
    }
    if (start < list.size()) {
        out.push_back(list.substr(start));
    }
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// "01-03,7" -> {"01", "02", "03", "7"}
Result<std::vector<std::string>> expand_group(std::string_view whole, std::string_view group,
                                              std::size_t budget) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= group.size()) {
        const std::size_t comma = std::min(group.find(',', pos), group.size());
        const std::string_view item = group.substr(pos, comma - pos);
        pos = comma + 1;
        const std::size_t dash = item.find('-');
        const std::string_view lo_text = item.substr(0, dash);
        const std::string_view hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
        if (!all_digits(lo_text) || !all_digits(hi_text) || lo_text.size() > 9 || hi_text.size() > 9) {
            return bad(whole, fmt::format("'{}' is not a number or a range", item));
        }
        unsigned long lo = 0;
        unsigned long hi = 0;
        std::from_chars(lo_text.data(), lo_text.data() + lo_text.size(), lo);
        std::from_chars(hi_text.data(), hi_text.data() + hi_text.size(), hi);
        if (hi < lo) {
            return bad(whole, fmt::format("range '{}' runs backwards", item));
        }
        if (hi - lo + 1 > budget || out.size() + (hi - lo + 1) > budget) {
            return bad(whole, fmt::format("more than {} hosts", budget));
        }
        // Slurm pads to the width of the lower bound when it has a leading zero.
        const std::size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
        for (unsigned long n = lo; n <= hi; ++n) {
            out.push_back(fmt::format("{:0{}}", n, width));
        }
    }
    return out;
}

Status expand_name(std::string_view whole, std::string_view name, std::vector<std::string>& out,
                   std::size_t max_hosts) {
    std::vector<std::string> partial{""};
    std::size_t pos = 0;
    while (pos < name.size()) {
        const std::size_t open = name.find('[', pos);
        const std::string_view literal = name.substr(pos, open - pos);
        for (auto& p : partial) {
            p += literal;
        }
        if (open == std::string_view::npos) {
            break;
        }
        const std::size_t close = name.find(']', open);
        auto numbers = expand_group(whole, name.substr(open + 1, close - open - 1), max_hosts);
        if (!numbers) {
            return tl::unexpected(numbers.error());
        }
        if (partial.size() * numbers->size() > max_hosts) {
            return bad(whole, fmt::format("more than {} hosts", max_hosts));
        }
        std::vector<std::string> next;
        next.reserve(partial.size() * numbers->size());
        for (const auto& p : partial) {
            for (const auto& n : *numbers) {
                next.push_back(p + n);
            }
        }
        partial = std::move(next);
        pos = close + 1;
    }
    if (out.size() + partial.size() > max_hosts) {
        return bad(whole, fmt::format("more than {} hosts", max_hosts));
    }
    for (auto& p : partial) {
        out.push_back(std::move(p));
    }
    return {};
}

} // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view hostlist, std::size_t max_hosts) {
    auto names = split_names(hostlist);
    if (!names) {
        return tl::unexpected(names.error());
    }
    std::vector<std::string> out;
    for (const auto name : *names) {
        if (name.front() == '[') {
            return bad(hostlist, "a host name cannot start with '['");
        }
        if (auto ok = expand_name(hostlist, name, out, max_hosts); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    return out;
}

} // namespace tandem::slurm
