#include "core/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/shell_words.hpp"
#include "core/spec_parse_detail.hpp"

namespace tandem {

namespace {

tl::unexpected<std::string> refuse(std::string message) {
    return tl::unexpected(std::move(message));
}

// Why `key` cannot name a sweep value, or empty.
std::string key_problem(const std::string& key) {
    if (!detail::valid_env_name(key)) {
        return fmt::format("'{}' is not a variable name (letters, digits and _, not starting with a digit)",
                           key);
    }
    for (std::string_view own : {"TANDEM_", "SKYPILOT_"}) {
        if (key.rfind(own, 0) == 0) {
            return fmt::format("'{}': names starting with {} are tandem's own", key, own);
        }
    }
    return {};
}

std::string value_problem(const std::string& key, const std::string& value) {
    if (value.size() > k_max_sweep_value_bytes) {
        return fmt::format("{}: a value of {} bytes (at most {})", key, value.size(),
                           k_max_sweep_value_bytes);
    }
    if (value.find('\0') != std::string::npos) {
        return fmt::format("{}: a value holds a NUL byte", key);
    }
    return {};
}

std::string too_many(std::size_t n) {
    return fmt::format("{} elements (at most {})", n, k_max_sweep_elements);
}

} // namespace

tl::expected<Sweep, std::string> sweep_grid(const std::vector<SweepAxis>& axes) {
    Sweep out;
    if (axes.empty()) {
        return refuse("no values to sweep over");
    }
    std::size_t total = 1;
    std::set<std::string> seen;
    for (const auto& [key, values] : axes) {
        if (auto why = key_problem(key); !why.empty()) {
            return refuse(why);
        }
        if (!seen.insert(key).second) {
            return refuse(fmt::format("{} is given twice", key));
        }
        if (values.empty()) {
            return refuse(fmt::format("{} has no values", key));
        }
        for (const auto& v : values) {
            if (auto why = value_problem(key, v); !why.empty()) {
                return refuse(why);
            }
        }
        if (values.size() > k_max_sweep_elements / total) { // total * size would pass the bound
            std::string sizes;
            for (const auto& axis : axes) {
                sizes += (sizes.empty() ? "" : " x ") + std::to_string(axis.second.size());
            }
            return refuse(fmt::format("the grid {} has more than {} elements", sizes, k_max_sweep_elements));
        }
        total *= values.size();
        out.keys.push_back(key);
    }
    out.elements.reserve(total);
    std::vector<std::size_t> at(axes.size(), 0);
    for (std::size_t n = 0; n < total; ++n) {
        std::vector<std::string> row;
        row.reserve(axes.size());
        for (std::size_t k = 0; k < axes.size(); ++k) {
            row.push_back(axes[k].second[at[k]]);
        }
        out.elements.push_back(std::move(row));
        for (std::size_t k = axes.size(); k-- > 0;) { // the last key varies fastest
            if (++at[k] < axes[k].second.size()) {
                break;
            }
            at[k] = 0;
        }
    }
    return out;
}

tl::expected<Sweep, std::string>
sweep_elements(const std::vector<std::vector<std::pair<std::string, std::string>>>& elements) {
    Sweep out;
    if (elements.empty()) {
        return refuse("no elements");
    }
    if (elements.size() > k_max_sweep_elements) {
        return refuse(too_many(elements.size()));
    }
    for (const auto& [key, value] : elements.front()) {
        if (auto why = key_problem(key); !why.empty()) {
            return refuse(fmt::format("element 0: {}", why));
        }
        if (std::find(out.keys.begin(), out.keys.end(), key) != out.keys.end()) {
            return refuse(fmt::format("element 0: {} is given twice", key));
        }
        out.keys.push_back(key);
    }
    if (out.keys.empty()) {
        return refuse("element 0 sets no values");
    }
    for (std::size_t i = 0; i < elements.size(); ++i) {
        std::vector<std::string> row(out.keys.size());
        std::vector<bool> set(out.keys.size(), false);
        for (const auto& [key, value] : elements[i]) {
            const auto it = std::find(out.keys.begin(), out.keys.end(), key);
            if (it == out.keys.end()) {
                return refuse(
                    fmt::format("element {}: {} is not set by element 0 (every element sets the same "
                                "keys)",
                                i, key));
            }
            const auto k = static_cast<std::size_t>(it - out.keys.begin());
            if (set[k]) {
                return refuse(fmt::format("element {}: {} is given twice", i, key));
            }
            if (auto why = value_problem(key, value); !why.empty()) {
                return refuse(fmt::format("element {}: {}", i, why));
            }
            set[k] = true;
            row[k] = value;
        }
        for (std::size_t k = 0; k < set.size(); ++k) {
            if (!set[k]) {
                return refuse(fmt::format("element {}: {} is missing (every element sets the same keys)", i,
                                          out.keys[k]));
            }
        }
        out.elements.push_back(std::move(row));
    }
    return out;
}

tl::expected<Sweep, std::string> sweep_ranks(long long n) {
    if (n < 1) {
        return refuse(fmt::format("{} elements: at least 1", n));
    }
    if (static_cast<unsigned long long>(n) > k_max_sweep_elements) {
        return refuse(too_many(static_cast<std::size_t>(n)));
    }
    Sweep out;
    out.elements.assign(static_cast<std::size_t>(n), {});
    return out;
}

tl::expected<SweepAxis, std::string> parse_sweep_axis(std::string_view text) {
    const auto eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) {
        return refuse(fmt::format("'{}' is not KEY=VALUE[,VALUE...]", text.substr(0, 80)));
    }
    SweepAxis axis{std::string(text.substr(0, eq)), {}};
    if (auto why = key_problem(axis.first); !why.empty()) {
        return refuse(why);
    }
    std::string value;
    bool escaped = false;
    for (char c : text.substr(eq + 1)) {
        if (escaped) {
            if (c != ',' && c != '\\') {
                value += '\\';
            }
            value += c;
            escaped = false;
        } else if (c == '\\') {
            escaped = true;
        } else if (c == ',') {
            axis.second.push_back(std::move(value));
            value.clear();
        } else {
            value += c;
        }
        if (value.size() > k_max_sweep_value_bytes) {
            return refuse(value_problem(axis.first, value));
        }
        if (axis.second.size() > k_max_sweep_elements) {
            return refuse(fmt::format("{}: more than {} values", axis.first, k_max_sweep_elements));
        }
    }
    if (escaped) {
        value += '\\';
    }
    axis.second.push_back(std::move(value));
    return axis;
}

std::vector<std::pair<std::string, std::string>> sweep_element_env(const Sweep& sweep, std::size_t index) {
    std::vector<std::pair<std::string, std::string>> env;
    if (index < sweep.elements.size()) {
        const auto& row = sweep.elements[index];
        for (std::size_t k = 0; k < sweep.keys.size() && k < row.size(); ++k) {
            env.emplace_back(sweep.keys[k], row[k]);
        }
    }
    const auto i = std::to_string(index), n = std::to_string(sweep.size());
    env.emplace_back("TANDEM_SWEEP_INDEX", i);
    env.emplace_back("TANDEM_SWEEP_SIZE", n);
    env.emplace_back("SKYPILOT_JOB_RANK", i);
    env.emplace_back("SKYPILOT_NUM_JOBS", n);
    return env;
}

tl::expected<std::string, std::string> sweep_shell_block(const Sweep& sweep, std::string_view index) {
    std::string out;
    if (!sweep.keys.empty()) {
        out += fmt::format("case \"{}\" in\n", index);
        for (std::size_t i = 0; i < sweep.size(); ++i) {
            out += fmt::format("{}) export", i);
            for (std::size_t k = 0; k < sweep.keys.size() && k < sweep.elements[i].size(); ++k) {
                const auto& value = sweep.elements[i][k];
                if (!is_shell_name(sweep.keys[k]) || value.find('\0') != std::string::npos) {
                    return tl::unexpected(fmt::format("element {} cannot be written in a shell script", i));
                }
                out += fmt::format(" {}={}", sweep.keys[k], shell_quote(value));
            }
            out += " ;;\n";
        }
        out += "esac\n";
    }
    out += fmt::format("export TANDEM_SWEEP_INDEX=\"{0}\" TANDEM_SWEEP_SIZE={1}\n"
                       "export SKYPILOT_JOB_RANK=\"$TANDEM_SWEEP_INDEX\" SKYPILOT_NUM_JOBS={1}\n",
                       index, sweep.size());
    return out;
}

std::string sweep_element_label(const Sweep& sweep, std::size_t index) {
    if (sweep.keys.empty() || index >= sweep.elements.size()) {
        return fmt::format("#{}", index);
    }
    std::string out;
    const auto& row = sweep.elements[index];
    for (std::size_t k = 0; k < sweep.keys.size() && k < row.size(); ++k) {
        std::string v;
        for (char c : row[k]) {
            v += c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
        }
        if (v.size() > 40) {
            std::size_t cut = 37;
            while (cut > 0 && (static_cast<unsigned char>(v[cut]) & 0xC0) == 0x80) {
                --cut; // not inside a UTF-8 character
            }
            v = v.substr(0, cut) + "...";
        }
        out += (out.empty() ? "" : " ") + sweep.keys[k] + "=" + v;
    }
    return out;
}

namespace {

constexpr std::pair<JobState, char> k_letters[] = {
    {JobState::pending, 'P'},   {JobState::starting, 'T'}, {JobState::running, 'R'},
    {JobState::succeeded, 'S'}, {JobState::failed, 'F'},   {JobState::cancelled, 'C'},
    {JobState::unknown, 'U'},
};

} // namespace

Result<std::vector<std::size_t>> log_elements(std::int64_t job_id, const Sweep& sweep,
                                              std::optional<int> element) {
    std::vector<std::size_t> which;
    if (element) {
        if (*element < 0 || static_cast<std::size_t>(*element) >= sweep.size()) {
            return fail(ErrorKind::usage, fmt::format("job {} has elements 0-{}; there is no element {}",
                                                      job_id, sweep.size() - 1, *element));
        }
        which.push_back(static_cast<std::size_t>(*element));
    } else {
        for (std::size_t i = 0; i < sweep.size(); ++i) {
            which.push_back(i);
        }
    }
    return which;
}

std::string format_element_states(const std::vector<ElementState>& elements) {
    std::string out;
    out.reserve(elements.size() * 3);
    for (const auto& e : elements) {
        if (!out.empty()) {
            out += ',';
        }
        for (const auto& [state, letter] : k_letters) {
            if (state == e.state) {
                out += letter;
            }
        }
        if (e.exit_code) {
            out += std::to_string(*e.exit_code);
        }
    }
    return out;
}

std::optional<std::vector<ElementState>> parse_element_states(std::string_view text) {
    std::vector<ElementState> out;
    if (text.empty()) {
        return out;
    }
    std::size_t at = 0;
    while (at <= text.size()) {
        if (out.size() >= k_max_sweep_elements) {
            return std::nullopt;
        }
        const auto comma = std::min(text.find(',', at), text.size());
        const auto item = text.substr(at, comma - at);
        if (item.empty()) {
            return std::nullopt;
        }
        ElementState e;
        bool known = false;
        for (const auto& [state, letter] : k_letters) {
            if (letter == item[0]) {
                e.state = state;
                known = true;
            }
        }
        if (!known) {
            return std::nullopt;
        }
        if (item.size() > 1) {
            int code = 0;
            const auto digits = item.substr(1);
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code);
            if (ec != std::errc() || end != digits.data() + digits.size()) {
                return std::nullopt;
            }
            e.exit_code = code;
        }
        out.push_back(e);
        at = comma + 1;
    }
    return out;
}

SweepOutcome sweep_outcome(const std::vector<ElementState>& elements) {
    SweepOutcome out;
    if (elements.empty()) {
        return out;
    }
    // Counted in the order a reader wants them: what is done, then what is still going.
    constexpr JobState order[] = {JobState::succeeded, JobState::failed,   JobState::cancelled,
                                  JobState::running,   JobState::starting, JobState::pending,
                                  JobState::unknown};
    std::size_t counts[std::size(order)] = {};
    for (const auto& e : elements) {
        for (std::size_t i = 0; i < std::size(order); ++i) {
            counts[i] += e.state == order[i] ? 1 : 0;
        }
    }
    auto count = [&](JobState s) {
        for (std::size_t i = 0; i < std::size(order); ++i) {
            if (order[i] == s) {
                return counts[i];
            }
        }
        return std::size_t{0};
    };
    out.reason = fmt::format("{} element{}:", elements.size(), elements.size() == 1 ? "" : "s");
    const char* sep = " ";
    for (std::size_t i = 0; i < std::size(order); ++i) {
        if (counts[i] > 0) {
            out.reason += fmt::format("{}{} {}", sep, counts[i], to_string(order[i]));
            sep = ", ";
        }
    }
    if (count(JobState::running) + count(JobState::starting) > 0) {
        out.state = JobState::running;
    } else if (count(JobState::pending) > 0) {
        out.state = JobState::pending;
    } else if (count(JobState::unknown) > 0) {
        out.state = JobState::unknown;
    } else if (count(JobState::failed) > 0) {
        out.state = JobState::failed;
    } else if (count(JobState::cancelled) > 0) {
        out.state = JobState::cancelled;
    } else {
        out.state = JobState::succeeded;
        out.exit_code = 0;
    }
    if (out.state == JobState::failed) {
        for (const auto& e : elements) {
            if (e.state == JobState::failed) {
                out.exit_code = e.exit_code;
                break;
            }
        }
    }
    return out;
}

std::optional<std::vector<std::size_t>> index_list(std::string_view text, std::size_t size) {
    auto index = [](std::string_view s) -> std::optional<std::size_t> {
        std::size_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || s.size() > 9 || ec != std::errc() || end != s.data() + s.size()) {
            return std::nullopt;
        }
        return v;
    };
    std::vector<std::size_t> out;
    while (!text.empty()) {
        const auto comma = std::min(text.find(','), text.size());
        const auto part = text.substr(0, comma);
        text.remove_prefix(std::min(comma + 1, text.size()));
        const auto dash = part.find('-');
        const auto lo = index(part.substr(0, dash));
        const auto hi = dash == std::string_view::npos ? lo : index(part.substr(dash + 1));
        if (!lo || !hi || *lo > *hi || *hi >= size) {
            return std::nullopt;
        }
        for (std::size_t i = *lo; i <= *hi; ++i) {
            out.push_back(i);
        }
        if (out.size() > size) {
            return std::nullopt; // overlapping ranges: more indexes than the sweep has
        }
    }
    return out;
}

JobUpdate sweep_update(const Sweep& sweep, const std::vector<ElementState>& elements,
                       const std::string& pending_reason) {
    JobUpdate u;
    const auto outcome = sweep_outcome(elements);
    u.state = outcome.state;
    u.exit_code = outcome.exit_code;
    u.reason = outcome.reason;
    if (u.state == JobState::pending && !pending_reason.empty()) {
        u.reason += fmt::format(" ({})", pending_reason);
    }
    if (const auto failed = failed_elements_text(sweep, elements); !failed.empty()) {
        u.reason += "; failed: " + failed;
    }
    u.elements = format_element_states(elements);
    return u;
}

std::string failed_elements_text(const Sweep& sweep, const std::vector<ElementState>& elements,
                                 std::size_t limit) {
    std::string out;
    std::size_t named = 0, more = 0;
    for (std::size_t i = 0; i < elements.size(); ++i) {
        if (elements[i].state != JobState::failed) {
            continue;
        }
        if (named == limit) {
            ++more;
            continue;
        }
        const auto label = sweep_element_label(sweep, i);
        out += fmt::format("{}#{}{}{}: {}", out.empty() ? "" : "; ", i, label.rfind('#', 0) == 0 ? "" : " ",
                           label.rfind('#', 0) == 0 ? "" : label,
                           elements[i].exit_code ? fmt::format("exit code {}", *elements[i].exit_code)
                                                 : std::string("failed"));
        ++named;
    }
    if (more > 0) {
        out += fmt::format("; and {} more", more);
    }
    return out;
}

nlohmann::json sweep_to_json(const Sweep& sweep) {
    nlohmann::json j;
    j["keys"] = sweep.keys;
    j["elements"] = sweep.elements;
    j["parallel"] = sweep.parallel;
    return j;
}

std::optional<Sweep> sweep_from_json(const nlohmann::json& j) {
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto keys = j.find("keys"), elements = j.find("elements"), parallel = j.find("parallel");
    if (keys == j.end() || !keys->is_array() || elements == j.end() || !elements->is_array() ||
        elements->size() > k_max_sweep_elements || elements->empty()) {
        return std::nullopt;
    }
    Sweep s;
    for (const auto& k : *keys) {
        if (!k.is_string()) {
            return std::nullopt;
        }
        s.keys.push_back(k.get<std::string>());
    }
    for (const auto& row : *elements) {
        if (!row.is_array() || row.size() != s.keys.size()) {
            return std::nullopt;
        }
        std::vector<std::string> values;
        for (const auto& v : row) {
            if (!v.is_string()) {
                return std::nullopt;
            }
            values.push_back(v.get<std::string>());
        }
        s.elements.push_back(std::move(values));
    }
    if (parallel != j.end() && parallel->is_number_integer()) {
        s.parallel = std::max(0, parallel->get<int>());
    }
    return s;
}

std::optional<Sweep> sweep_of(const JobRecord& job) {
    if (job.spec_json.find("\"sweep\"") == std::string::npos) {
        return std::nullopt;
    }
    const auto spec = nlohmann::json::parse(job.spec_json, nullptr, false);
    if (!spec.is_object()) {
        return std::nullopt;
    }
    const auto it = spec.find("sweep");
    return it == spec.end() ? std::nullopt : sweep_from_json(*it);
}

} // namespace tandem
