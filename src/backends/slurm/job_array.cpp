#include "backends/slurm/job_array.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace tandem::slurm {

namespace {

bool digits(std::string_view s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::optional<std::size_t> index_of(std::string_view s) {
    std::size_t v = 0;
    if (!digits(s) || s.size() > 9) {
        return std::nullopt;
    }
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

} // namespace

bool read_slurm_job_id(std::string_view text, SlurmJob& job) {
    const auto underscore = text.find('_');
    if (underscore == std::string_view::npos) {
        if (!digits(text)) {
            return false;
        }
        job.job_id = std::string(text);
        return true;
    }
    const auto id = text.substr(0, underscore), rest = text.substr(underscore + 1);
    if (!digits(id)) {
        return false;
    }
    if (auto task = index_of(rest)) {
        job.job_id = std::string(id);
        job.array_task = static_cast<int>(*task);
        return true;
    }
    if (rest.size() >= 3 && rest.front() == '[' && rest.back() == ']') {
        const auto inner = rest.substr(1, rest.size() - 2);
        const bool shaped = std::all_of(inner.begin(), inner.end(), [](unsigned char c) {
            return std::isdigit(c) != 0 || c == '-' || c == ',' || c == '%';
        });
        if (!shaped) {
            return false;
        }
        job.job_id = std::string(id);
        job.array_pending = std::string(inner);
        return true;
    }
    return false;
}

std::string array_range(const Sweep& sweep) {
    return fmt::format("0-{}{}", sweep.size() - 1,
                       sweep.parallel > 0 ? fmt::format("%{}", sweep.parallel) : std::string());
}

std::optional<std::vector<std::size_t>> array_indexes(std::string_view text, std::size_t size) {
    return index_list(text.substr(0, text.find('%')), size);
}

bool lists_every_element(const std::vector<SlurmJob>& lines, const Sweep& sweep) {
    std::vector<bool> named(sweep.size(), false);
    for (const auto& line : lines) {
        if (line.array_task && static_cast<std::size_t>(*line.array_task) < named.size()) {
            named[static_cast<std::size_t>(*line.array_task)] = true;
        } else if (!line.array_pending.empty()) {
            for (std::size_t i :
                 array_indexes(line.array_pending, named.size()).value_or(std::vector<std::size_t>{})) {
                named[i] = true;
            }
        }
    }
    return std::all_of(named.begin(), named.end(), [](bool b) { return b; });
}

JobUpdate array_update(const Sweep& sweep, const std::vector<const SlurmJob*>& lines, std::string_view stored,
                       const std::string& unseen_reason) {
    const std::size_t n = sweep.size();
    std::vector<ElementState> elements(n, ElementState{JobState::unknown, std::nullopt});
    std::vector<bool> seen(n, false);
    std::optional<std::int64_t> started, ended;
    std::string pending_reason;
    bool any = false;
    auto take = [&](std::size_t i, const JobUpdate& u) {
        if (i >= n || seen[i]) {
            return;
        }
        seen[i] = true;
        any = true;
        elements[i] = ElementState{u.state, u.exit_code};
        if (u.started_at && (!started || *u.started_at < *started)) {
            started = u.started_at;
        }
        if (u.ended_at && (!ended || *u.ended_at > *ended)) {
            ended = u.ended_at;
        }
        if (u.state == JobState::pending && pending_reason.empty()) {
            pending_reason = u.reason;
        }
    };
    for (const SlurmJob* line : lines) {
        if (line->array_task) {
            take(static_cast<std::size_t>(*line->array_task), to_job_update(*line));
        } else if (!line->array_pending.empty()) {
            const auto u = to_job_update(*line);
            for (std::size_t i : array_indexes(line->array_pending, n).value_or(std::vector<std::size_t>{})) {
                take(i, u);
            }
        }
    }
    const auto before = parse_element_states(stored).value_or(std::vector<ElementState>{});
    for (std::size_t i = 0; i < n; ++i) {
        if (!seen[i] && i < before.size() && is_terminal(before[i].state)) {
            elements[i] = before[i];
        }
    }
    if (!any && sweep_outcome(elements).state == JobState::unknown) {
        JobUpdate u;
        u.state = JobState::unknown;
        u.reason = unseen_reason;
        return u; // nothing new: the store keeps what it had
    }
    JobUpdate u = sweep_update(sweep, elements, pending_reason);
    u.started_at = started;
    if (is_terminal(u.state)) {
        u.ended_at = ended;
    }
    return u;
}

std::string element_output(const std::string& pattern, std::size_t index) {
    std::string path = pattern;
    if (const auto at = path.find("%a"); at != std::string::npos) {
        path.replace(at, 2, std::to_string(index));
    }
    return path;
}

} // namespace tandem::slurm
