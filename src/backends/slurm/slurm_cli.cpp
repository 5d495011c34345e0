// Slurm command lines and their parsers (the model is described in slurm_cli.hpp).

#include "backends/slurm/slurm_cli.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "backends/slurm/hostlist.hpp"
#include "backends/slurm/job_array.hpp"
#include "backends/slurm/script_quoting.hpp"
#include "backends/slurm/submit_plan.hpp"
#include "core/quantity.hpp"

namespace tandem::slurm::cli {

namespace {

const std::string k_sep_text(1, k_sep);

// squeue -O fields; `:0` asks for the whole value, the suffix is the separator. Name is last. The id is
// JobArrayID: a job's id, and an array element's "<array id>_<index>" on 22.05 and 24.11 alike (JobID
// prints each element's own number there).
constexpr std::string_view k_squeue_fields[] = {"JobArrayID", "State",    "Reason",  "exit_code", "StartTime",
                                                "EndTime",    "NodeList", "Comment", "Name"};
// Discovery: the comment, free text anyone who can submit may write, comes last.
constexpr std::string_view k_discover_fields[] = {"JobArrayID", "State",    "Reason",   "exit_code",
                                                  "StartTime",  "EndTime",  "NodeList", "UserName",
                                                  "SubmitTime", "NumNodes", "Comment"};
// JobID, not JobIDRaw: an array element is "123_4" (its raw id is a number of its own).
constexpr std::string_view k_sacct_fields = "JobID,State,ExitCode,Start,End,NodeList,Reason,Comment";
constexpr std::string_view k_node_fields[] = {"NodeHost", "StateLong", "CPUs",     "CPUsState",
                                              "Memory",   "Gres",      "GresUsed", "Partition"};
constexpr std::string_view k_partition_fields[] = {"Partition", "Available", "Time", "NodeList", "DefaultTime"};

std::string format_option(const std::string_view* fields, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += fmt::format("{}:0{}", fields[i], i + 1 < n ? k_sep_text + "," : std::string());
    }
    return out;
}

template <std::size_t N> std::string format_option(const std::string_view (&fields)[N]) {
    return format_option(fields, N);
}

// The line as it can be shown in a one-line error: control bytes escaped, at most 160 characters.
std::string quoted(std::string_view line) {
    std::string out;
    for (const char c : line.substr(0, 160)) {
        const auto u = static_cast<unsigned char>(c);
        out += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
    }
    return "'" + out + (line.size() > 160 ? "...'" : "'");
}

tl::unexpected<Error> unexpected_line(std::string_view tool, std::string_view line, std::string_view why) {
    return fail(ErrorKind::remote,
                fmt::format("{} printed an unexpected line ({}): {}", tool, why, quoted(line)));
}

// Splits into exactly `n` fields; the last takes the rest of the line.
std::optional<std::vector<std::string>> split_fields(std::string_view line, std::size_t n, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (out.size() + 1 < n) {
        const auto at = line.find(sep, start);
        if (at == std::string_view::npos) {
            return std::nullopt;
        }
        out.emplace_back(line.substr(start, at - start));
        start = at + 1;
    }
    out.emplace_back(line.substr(start));
    return out;
}

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (!line.empty()) {
            out.push_back(line);
        }
        if (nl == std::string_view::npos) {
            break;
        }
        text.remove_prefix(nl + 1);
    }
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::optional<std::int64_t> to_int(std::string_view s) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

bool is_state_word(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isupper(c) || c == '_'; });
}

// A time under SLURM_TIME_FORMAT=%s: Unix seconds, or one of Slurm's words for "none". squeue prints
// NONE as the end of a running job without a time limit (a partition without MaxTime).
std::optional<std::optional<std::int64_t>> parse_time(std::string_view s) {
    if (s == "N/A" || s == "Unknown" || s == "None" || s == "NONE" || s.empty()) {
        return std::optional<std::int64_t>{};
    }
    auto v = to_int(s);
    if (!v || *v < 0) {
        return std::nullopt;
    }
    return *v == 0 ? std::optional<std::int64_t>{} : std::optional<std::int64_t>{*v};
}

std::string none_if_null(std::string s) {
    return s == "(null)" || s == "None assigned" ? std::string() : s;
}

} // namespace

std::string command_line(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) {
        if (!out.empty()) {
            out += ' ';
        }
        out += shell_quote(w);
    }
    return out;
}

std::string sbatch_command(const std::vector<std::string>& secret_names) {
    // bash's `read` takes a pipe one byte at a time, so sbatch gets the rest of stdin (the script) whole.
    constexpr std::string_view program =
        "for n in \"$@\"; do IFS= read -r -d '' v || { echo 'tandem: secrets missing on stdin' >&2; "
        "exit 97; }; export \"$n=$v\"; done; unset n v; exec sbatch --parsable";
    std::vector<std::string> words{"/bin/bash", "-c", std::string(program), "tandem-submit"};
    words.insert(words.end(), secret_names.begin(), secret_names.end());
    return command_line(words);
}

std::string sbatch_input(const std::vector<std::string>& secret_values, std::string_view script) {
    std::string in;
    for (const auto& v : secret_values) {
        in += v;
        in += '\0';
    }
    in += script;
    return in;
}

std::string srun_beside_command(const std::string& job_id, const std::string& node, bool tty,
                                const std::vector<std::string>& command) {
    std::vector<std::string> words{"srun", "--jobid=" + job_id, "--overlap", "--nodes=1", "--ntasks=1",
                                   "--nodelist=" + node, "--quiet"};
    if (tty) {
        words.push_back("--pty");
    }
    std::string line = command_line(words);
    if (command.empty()) {
        return line + " \"${SHELL:-/bin/bash}\" -l"; // the login node's idea of the user's shell
    }
    line += " -- " + command_line(command);
    if (tty) {
        return line;
    }
    // srun adds "srun: error: NODE: task 0: Exited with exit code N" (even with --quiet) to a failing
    // command's stderr: taken out, so stderr is the command's own. sed -u passes every other byte as it
    // comes (a last line without a newline stays so); the exit status goes round the pipe in a file.
    return "s=$(mktemp) || exit 255; { { " + line +
           " 2>&1 1>&3 3>&-; echo \"$?\" >\"$s\"; } | sed -u -E '/^srun: error: [^ :]+: tasks? [0-9,-]+: "
           "(Exited with exit code [0-9]+|Killed|Terminated|Interrupt|Hangup|Aborted|Segmentation fault)$/d' "
           ">&2; } 3>&1; rc=$(cat \"$s\"); rm -f \"$s\"; exit \"${rc:-255}\"";
}

std::string squeue_command(const std::vector<std::string>& job_ids) {
    std::string ids;
    for (const auto& id : job_ids) {
        ids += (ids.empty() ? "" : ",") + id;
    }
    // --array: one line per element of a job array (a sweep), pending ones too.
    return command_line({"env", "SLURM_TIME_FORMAT=%s", "squeue", "--noheader", "--states=all", "--array",
                         "--jobs=" + ids, "--Format=" + format_option(k_squeue_fields)});
}

std::string squeue_comments_command() {
    return command_line({"squeue", "--noheader", "--states=all", "--me",
                         "--Format=JobArrayID:0" + k_sep_text + ",Comment:0"});
}

std::string discover_command(bool all_users) {
    auto listing = [](bool mine) {
        std::vector<std::string> words{"env", "SLURM_TIME_FORMAT=%s", "squeue", "--noheader", "--states=all"};
        if (mine) {
            words.push_back("--me");
        }
        words.push_back("--Format=" + format_option(k_discover_fields));
        return command_line(words);
    };
    std::string out = command_line({"id", "-un"}) + " && " + listing(true);
    if (all_users) {
        out += " && " + command_line({"echo", std::string(k_discover_marker)}) + " && " + listing(false);
    }
    return out;
}

std::string sacct_command(const std::vector<std::string>& job_ids) {
    std::string ids;
    for (const auto& id : job_ids) {
        ids += (ids.empty() ? "" : ",") + id;
    }
    return command_line({"env", "SLURM_TIME_FORMAT=%s", "sacct", "--allocations", "--noheader", "--parsable2",
                         "--delimiter=" + k_sep_text, "--jobs=" + ids,
                         "--format=" + std::string(k_sacct_fields)});
}

std::string scancel_command(const std::string& job_id) {
    return command_line({"scancel", job_id});
}

std::string sinfo_command() {
    return command_line({"sinfo", "--noheader", "--Node", "--Format=" + format_option(k_node_fields)}) +
           " && " + command_line({"echo", std::string(k_sinfo_marker)}) + " && " +
           command_line({"sinfo", "--noheader", "--Format=" + format_option(k_partition_fields)});
}

std::string version_command() {
    return command_line({"sinfo", "--version"}) + " && " + command_line({"sbatch", "--version"});
}

Result<std::string> parse_sbatch_parsable(std::string_view out) {
    const auto lines = lines_of(out);
    // sbatch may print warnings on stdout before the id on some sites; the id is the last line.
    if (lines.empty()) {
        return fail(ErrorKind::remote, "sbatch --parsable printed nothing (expected a job id)");
    }
    std::string_view last = lines.back();
    const std::string_view id = last.substr(0, last.find(';'));
    if (!all_digits(id)) {
        return unexpected_line("sbatch --parsable", last, "expected ID or ID;CLUSTER");
    }
    return std::string(id);
}

namespace {

// squeue's exit_code: up to 23.x the raw wait status (768 is exit 3, 9 is SIGKILL); 24.x prints
// EXIT:SIGNAL (3:0, 0:9) as sacct does. Returns what is wrong, or null.
const char* read_exit_field(const std::string& code, SlurmJob& j) {
    if (const auto colon = code.find(':'); colon != std::string::npos) {
        auto exit = to_int(std::string_view(code).substr(0, colon));
        auto sig = to_int(std::string_view(code).substr(colon + 1));
        if (!exit || !sig || *exit < 0 || *sig < 0) {
            return "the exit code is not EXIT:SIGNAL";
        }
        j.exit_code = static_cast<int>(*exit);
        j.signal = static_cast<int>(*sig);
        return nullptr;
    }
    auto status = to_int(code);
    if (!status || *status < 0) {
        return "the exit code is not a number";
    }
    j.exit_code = static_cast<int>((*status >> 8) & 0xff);
    j.signal = static_cast<int>(*status & 0x7f);
    return nullptr;
}

} // namespace

Result<std::vector<SlurmJob>> parse_squeue(std::string_view out) {
    std::vector<SlurmJob> jobs;
    constexpr std::size_t n = std::size(k_squeue_fields);
    for (const auto line : lines_of(out)) {
        auto f = split_fields(line, n, k_sep);
        if (!f) {
            return unexpected_line("squeue", line, fmt::format("expected {} fields", n));
        }
        SlurmJob j;
        if (!read_slurm_job_id((*f)[0], j)) {
            return unexpected_line("squeue", line, "the job id is not a number");
        }
        j.state = (*f)[1];
        if (!is_state_word(j.state)) {
            return unexpected_line("squeue", line, "the state is not a Slurm state name");
        }
        j.state_reason = (*f)[2];
        if (auto why = read_exit_field((*f)[3], j)) {
            return unexpected_line("squeue", line, why);
        }
        auto start = parse_time((*f)[4]);
        auto end = parse_time((*f)[5]);
        if (!start || !end) {
            return unexpected_line("squeue", line, "a time is not Unix seconds");
        }
        j.start_time = *start;
        j.end_time = *end;
        j.nodes = none_if_null((*f)[6]);
        j.comment = none_if_null((*f)[7]);
        j.name = (*f)[8];
        jobs.push_back(std::move(j));
    }
    return jobs;
}

Result<SlurmListing> parse_discover(std::string_view out) {
    SlurmListing view;
    const auto lines = lines_of(out);
    if (lines.empty() || lines.front().find(k_sep) != std::string_view::npos) {
        return fail(ErrorKind::remote, "id -un printed no user name");
    }
    view.me = std::string(lines.front());
    constexpr std::size_t n = std::size(k_discover_fields);
    bool everyone = false;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto line = lines[i];
        if (line == k_discover_marker) {
            everyone = true;
            continue;
        }
        // A comment is anyone's free text and may hold a line break: a line of the wrong shape is
        // counted and skipped, never a reason to show nothing.
        auto f = split_fields(line, n, k_sep);
        SlurmJob j;
        bool ok = f && read_slurm_job_id((*f)[0], j) && is_state_word((*f)[1]);
        if (ok) {
            j.state = (*f)[1];
            j.state_reason = (*f)[2];
            auto start = parse_time((*f)[4]);
            auto end = parse_time((*f)[5]);
            auto submitted = parse_time((*f)[8]);
            auto nodes = to_int((*f)[9]);
            ok = start && end && submitted && nodes && *nodes >= 0 && *nodes <= 1'000'000 &&
                 read_exit_field((*f)[3], j) == nullptr;
            if (ok) {
                j.start_time = *start;
                j.end_time = *end;
                j.submit_time = *submitted;
                j.node_count = static_cast<int>(*nodes);
            }
            j.nodes = none_if_null((*f)[6]);
            j.user = (*f)[7];
            j.comment = none_if_null((*f)[10]);
        }
        if (!ok) {
            ++view.unreadable;
            continue;
        }
        (everyone ? view.everyone : view.mine).push_back(std::move(j));
    }
    return view;
}

std::optional<std::string> find_comment(std::string_view out, std::string_view token) {
    for (const auto line : lines_of(out)) {
        auto f = split_fields(line, 2, k_sep);
        SlurmJob j;
        if (f && comment_has_token((*f)[1], token) && read_slurm_job_id((*f)[0], j)) {
            return j.job_id; // an array's id, for any of its elements
        }
    }
    return std::nullopt;
}

Result<std::vector<SlurmJob>> parse_sacct(std::string_view out) {
    std::vector<SlurmJob> jobs;
    for (const auto line : lines_of(out)) {
        auto f = split_fields(line, 8, k_sep);
        if (!f) {
            return unexpected_line("sacct", line, "expected 8 fields");
        }
        SlurmJob j;
        if (!read_slurm_job_id((*f)[0], j)) {
            return unexpected_line("sacct", line, "the job id is not a number");
        }
        // "CANCELLED by 1001": the base state is the first word.
        const std::string& state = (*f)[1];
        j.state = state.substr(0, state.find(' '));
        if (!is_state_word(j.state)) {
            return unexpected_line("sacct", line, "the state is not a Slurm state name");
        }
        // "3:0" is exit code 3, no signal; "0:15" is signal 15.
        const std::string& code = (*f)[2];
        const auto colon = code.find(':');
        auto exit_code =
            colon == std::string::npos ? std::nullopt : to_int(std::string_view(code).substr(0, colon));
        auto sig =
            colon == std::string::npos ? std::nullopt : to_int(std::string_view(code).substr(colon + 1));
        if (!exit_code || !sig || *exit_code < 0 || *sig < 0) {
            return unexpected_line("sacct", line, "the exit code is not CODE:SIGNAL");
        }
        j.exit_code = static_cast<int>(*exit_code);
        j.signal = static_cast<int>(*sig);
        auto start = parse_time((*f)[3]);
        auto end = parse_time((*f)[4]);
        if (!start || !end) {
            return unexpected_line("sacct", line, "a time is not Unix seconds");
        }
        j.start_time = *start;
        j.end_time = *end;
        j.nodes = none_if_null((*f)[5]);
        j.state_reason = (*f)[6];
        j.comment = none_if_null((*f)[7]);
        jobs.push_back(std::move(j));
    }
    return jobs;
}

std::optional<int> parse_max_array_size(std::string_view out) {
    for (const auto line : lines_of(out)) {
        constexpr std::string_view key = "MaxArraySize";
        if (line.substr(0, key.size()) != key) {
            continue;
        }
        auto rest = line.substr(key.size());
        const auto eq = rest.find('=');
        if (eq == std::string_view::npos ||
            rest.substr(0, eq).find_first_not_of(' ') != std::string_view::npos) {
            continue;
        }
        rest = rest.substr(eq + 1);
        rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
        if (auto v = to_int(rest); v && *v >= 0 && *v <= 4'000'001) {
            return static_cast<int>(*v);
        }
    }
    return std::nullopt;
}

Result<std::optional<int>> parse_limit_minutes(std::string_view text) {
    if (text == "UNLIMITED" || text == "infinite" || text == "INFINITE") {
        return std::optional<int>{};
    }
    auto minutes = parse_slurm_time_minutes(text);
    if (!minutes) {
        return fail(ErrorKind::remote, fmt::format("'{}' is not a Slurm time limit", text));
    }
    return std::optional<int>{*minutes};
}

namespace {

// sinfo's long node state, as the inventory wants it: "idle", "mixed", "allocated", "down", "drain"...
// The suffixes * ~ # ! % $ @ ^ - mark "not responding", "powered down" and so on.
std::string node_state(std::string state) {
    std::transform(state.begin(), state.end(), state.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    while (!state.empty() && std::string_view("*~#!%$@^-").find(state.back()) != std::string_view::npos) {
        state.pop_back();
    }
    if (state.find("drain") != std::string::npos) {
        return "drain";
    }
    if (state.rfind("down", 0) == 0) {
        return "down";
    }
    return state.substr(0, state.find('+'));
}

Status add_node_line(std::string_view line, std::map<std::string, std::size_t>& index,
                     std::vector<SlurmNode>& nodes) {
    constexpr std::size_t n = std::size(k_node_fields);
    auto f = split_fields(line, n, k_sep);
    if (!f) {
        return unexpected_line("sinfo", line, fmt::format("expected {} node fields", n));
    }
    auto cpus = to_int((*f)[2]);
    auto memory = to_int((*f)[4]);
    // CPUsState is allocated/idle/other/total.
    const std::string& cpu_state = (*f)[3];
    auto alloc = to_int(std::string_view(cpu_state).substr(0, cpu_state.find('/')));
    if ((*f)[0].empty() || !cpus || !memory || !alloc) {
        return unexpected_line("sinfo", line, "a node's name, CPUs or memory is not readable");
    }
    std::string partition = (*f)[7];
    if (!partition.empty() && partition.back() == '*') {
        partition.pop_back();
    }
    auto [it, fresh] = index.emplace((*f)[0], nodes.size());
    if (fresh) {
        SlurmNode node;
        node.name = (*f)[0];
        node.state = node_state((*f)[1]);
        node.cpus = static_cast<int>(*cpus);
        node.alloc_cpus = static_cast<int>(*alloc);
        node.real_memory_mb = static_cast<double>(*memory);
        node.gres = none_if_null((*f)[5]);
        node.gres_used = none_if_null((*f)[6]);
        nodes.push_back(std::move(node));
    }
    // A node in several partitions is listed once per partition.
    nodes[it->second].partitions.push_back(partition);
    return {};
}

Status add_partition_line(std::string_view line, std::vector<SlurmPartition>& partitions) {
    constexpr std::size_t n = std::size(k_partition_fields);
    auto f = split_fields(line, n, k_sep);
    if (!f || (*f)[0].empty()) {
        return unexpected_line("sinfo", line, fmt::format("expected {} partition fields", n));
    }
    std::string name = (*f)[0];
    const bool is_default = name.back() == '*';
    if (is_default) {
        name.pop_back();
    }
    auto limit = parse_limit_minutes((*f)[2]);
    if (!limit) {
        return unexpected_line("sinfo", line, "the time limit is not readable");
    }
    auto hosts = expand_hostlist((*f)[3]);
    if (!hosts) {
        return unexpected_line("sinfo", line, "the node list is not a hostlist");
    }
    // sinfo may split a partition over several lines (one per group of nodes): merge them.
    for (auto& p : partitions) {
        if (p.name == name) {
            p.nodes.insert(p.nodes.end(), hosts->begin(), hosts->end());
            return {};
        }
    }
    SlurmPartition p;
    p.name = name;
    p.is_default = is_default;
    p.max_time_minutes = *limit;
    // "n/a": no DefaultTime. A DefaultTime of UNLIMITED reads as none too: either way no limit is set.
    if ((*f)[4] != "n/a") {
        auto default_limit = parse_limit_minutes((*f)[4]);
        if (!default_limit) {
            return unexpected_line("sinfo", line, "the default time is not readable");
        }
        p.default_time_minutes = *default_limit;
    }
    std::string state = (*f)[1];
    std::transform(state.begin(), state.end(), state.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    p.state = state;
    p.nodes = std::move(*hosts);
    partitions.push_back(std::move(p));
    return {};
}

} // namespace

Result<SinfoView> parse_sinfo(std::string_view out) {
    SinfoView view;
    std::map<std::string, std::size_t> index;
    bool in_partitions = false;
    for (const auto line : lines_of(out)) {
        if (line == k_sinfo_marker) {
            in_partitions = true;
            continue;
        }
        auto ok = in_partitions ? add_partition_line(line, view.partitions)
                                : add_node_line(line, index, view.nodes);
        if (!ok) {
            return tl::unexpected(ok.error());
        }
    }
    if (!in_partitions) {
        return fail(ErrorKind::remote, "sinfo's output ended before the partition list");
    }
    return view;
}

Result<std::string> parse_version(std::string_view out) {
    const auto lines = lines_of(out);
    if (lines.empty()) {
        return fail(ErrorKind::remote, "sinfo --version printed nothing");
    }
    const std::string_view first = lines.front();
    const auto space = first.rfind(' ');
    if (first.rfind("slurm", 0) != 0 || space == std::string_view::npos) {
        return unexpected_line("sinfo --version", first, "expected 'slurm VERSION'");
    }
    return std::string(first.substr(space + 1));
}

} // namespace tandem::slurm::cli
