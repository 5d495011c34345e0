#include "net/ssh_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <glob.h>
#include <sstream>
#include <system_error>

#include <sys/stat.h>

namespace tandem::net {

namespace {

constexpr int max_include_depth = 16;

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

struct Line {
    std::string keyword; // lower case
    std::vector<std::string> args;
};

std::string where(const std::string& file, int line) {
    return file + ":" + std::to_string(line);
}

// Splits one line into its keyword and arguments; an empty keyword is a blank or comment line.
Result<Line> split_line(std::string_view text, const std::string& file, int number) {
    Line out;
    std::size_t i = 0;
    while (i < text.size() && is_space(text[i])) {
        ++i;
    }
    if (i == text.size() || text[i] == '#') {
        return out;
    }
    std::size_t start = i;
    while (i < text.size() && !is_space(text[i]) && text[i] != '=') {
        ++i;
    }
    out.keyword = lower(text.substr(start, i - start));
    while (i < text.size() && is_space(text[i])) {
        ++i;
    }
    if (i < text.size() && text[i] == '=') {
        ++i;
    }
    while (i < text.size()) {
        while (i < text.size() && is_space(text[i])) {
            ++i;
        }
        if (i == text.size() || text[i] == '#') {
            break;
        }
        if (text[i] == '"') {
            auto close = text.find('"', i + 1);
            if (close == std::string_view::npos) {
                return fail(ErrorKind::config,
                            where(file, number) + ": " + out.keyword + ": a double quote is not closed");
            }
            out.args.emplace_back(text.substr(i + 1, close - i - 1));
            i = close + 1;
            continue;
        }
        start = i;
        while (i < text.size() && !is_space(text[i])) {
            ++i;
        }
        out.args.emplace_back(text.substr(start, i - start));
    }
    return out;
}

bool glob_match(std::string_view p, std::string_view s) {
    // Iterative `*`/`?` matching with one backtrack point, as OpenSSH's match_pattern.
    std::size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
    while (si < s.size()) {
        if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
            ++pi;
            ++si;
        } else if (pi < p.size() && p[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (star != std::string_view::npos) {
            pi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (pi < p.size() && p[pi] == '*') {
        ++pi;
    }
    return pi == p.size();
}

std::vector<std::string> split_commas(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    for (const auto& arg : args) {
        std::size_t start = 0;
        while (start <= arg.size()) {
            auto comma = arg.find(',', start);
            auto piece = arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (!piece.empty()) {
                out.push_back(piece);
            }
            if (comma == std::string::npos) {
                break;
            }
            start = comma + 1;
        }
    }
    return out;
}

Result<int> parse_port(std::string_view text, const std::string& what) {
    int port = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc{} || end != text.data() + text.size() || port < 1 || port > 65535) {
        return fail(ErrorKind::config, what + ": `" + std::string(text) + "` is not a port number (1-65535)");
    }
    return port;
}

class Walker {
public:
    Walker(const std::string& host, const std::string& ssh_dir, const SshConfigSource& source)
        : m_host(lower(host)), m_ssh_dir(ssh_dir), m_source(source) {}

    Status walk(const std::string& path, bool active, int depth) {
        auto text = m_source.read(path);
        if (!text) {
            return tl::unexpected(text.error());
        }
        if (!*text) {
            return {};
        }
        std::istringstream lines(**text);
        int number = 0;
        for (std::string raw; std::getline(lines, raw);) {
            ++number;
            auto line = split_line(raw, path, number);
            if (!line) {
                return tl::unexpected(line.error());
            }
            if (line->keyword.empty()) {
                continue;
            }
            const std::string at = where(path, number);
            if (line->keyword == "host") {
                active = ssh_host_patterns_match(line->args, m_host);
            } else if (line->keyword == "match") {
                active = match(line->args);
            } else if (line->keyword == "include") {
                if (!active) {
                    continue;
                }
                if (depth >= max_include_depth) {
                    return fail(ErrorKind::config, at + ": Include: nested more than " +
                                                       std::to_string(max_include_depth) + " deep");
                }
                for (const auto& arg : line->args) {
                    std::string pattern = arg;
                    if (pattern.starts_with("~/")) {
                        pattern = home() + pattern.substr(1);
                    } else if (!pattern.starts_with("/")) {
                        pattern = m_ssh_dir + "/" + pattern;
                    }
                    for (const auto& file : m_source.glob(pattern)) {
                        auto st = walk(file, active, depth + 1);
                        if (!st) {
                            return st;
                        }
                    }
                }
            } else if (active) {
                auto st = apply(*line, at);
                if (!st) {
                    return st;
                }
            }
        }
        return {};
    }

    SshHostConfig result() && { return std::move(m_out); }

private:
    std::string home() const {
        auto slash = m_ssh_dir.rfind('/');
        return slash == std::string::npos ? m_ssh_dir : m_ssh_dir.substr(0, slash);
    }

    bool match(const std::vector<std::string>& args) const {
        if (args.size() == 1 && lower(args[0]) == "all") {
            return true;
        }
        bool all = !args.empty();
        for (std::size_t i = 0; i < args.size(); ++i) {
            const std::string criterion = lower(args[i]);
            if ((criterion == "host" || criterion == "originalhost") && i + 1 < args.size()) {
                std::string name = m_host;
                if (criterion == "host" && m_out.hostname) {
                    name = lower(*m_out.hostname);
                }
                all = all && ssh_host_patterns_match(split_commas({args[i + 1]}), name);
                ++i;
            } else {
                return false; // canonical, exec, user, localuser...: not evaluated, so never matched
            }
        }
        return all;
    }

    Status apply(const Line& line, const std::string& at) {
        const auto& k = line.keyword;
        auto one = [&](std::optional<std::string>& slot) -> Status {
            if (line.args.empty()) {
                return fail(ErrorKind::config, at + ": " + k + " needs a value");
            }
            if (!slot) {
                slot = line.args[0];
            }
            return {};
        };
        if (k == "hostname") {
            return one(m_out.hostname);
        }
        if (k == "user") {
            return one(m_out.user);
        }
        if (k == "proxyjump") {
            return one(m_out.proxy_jump);
        }
        if (k == "stricthostkeychecking") {
            return one(m_out.strict_host_key_checking);
        }
        if (k == "port") {
            if (line.args.empty()) {
                return fail(ErrorKind::config, at + ": Port needs a value");
            }
            auto port = parse_port(line.args[0], at + ": Port");
            if (!port) {
                return tl::unexpected(port.error());
            }
            if (!m_out.port) {
                m_out.port = *port;
            }
            return {};
        }
        if (k == "identityfile") {
            if (line.args.empty()) {
                return fail(ErrorKind::config, at + ": IdentityFile needs a value");
            }
            if (std::find(m_out.identity_files.begin(), m_out.identity_files.end(), line.args[0]) ==
                m_out.identity_files.end()) {
                m_out.identity_files.push_back(line.args[0]);
            }
            return {};
        }
        if (k == "userknownhostsfile") {
            if (line.args.empty()) {
                return fail(ErrorKind::config, at + ": UserKnownHostsFile needs a value");
            }
            if (m_out.known_hosts_files.empty()) {
                m_out.known_hosts_files = line.args;
            }
            return {};
        }
        return {}; // every other keyword is OpenSSH's business, not ours
    }

    std::string m_host;
    std::string m_ssh_dir;
    const SshConfigSource& m_source;
    SshHostConfig m_out;
};

} // namespace

bool ssh_pattern_match(std::string_view pattern, std::string_view name) {
    return glob_match(lower(pattern), lower(name));
}

bool ssh_host_patterns_match(const std::vector<std::string>& patterns, std::string_view name) {
    bool matched = false;
    for (const auto& p : patterns) {
        if (p.starts_with("!")) {
            if (ssh_pattern_match(std::string_view(p).substr(1), name)) {
                return false;
            }
        } else if (ssh_pattern_match(p, name)) {
            matched = true;
        }
    }
    return matched;
}

Result<SshHostConfig> lookup_ssh_config(const std::string& path, const std::string& host,
                                        const std::string& ssh_dir, const SshConfigSource& source) {
    Walker walker(host, ssh_dir, source);
    auto st = walker.walk(path, true, 0);
    if (!st) {
        return tl::unexpected(st.error());
    }
    return std::move(walker).result();
}

Result<std::vector<SshJump>> parse_proxy_jump(std::string_view value, const std::string& what) {
    std::vector<SshJump> out;
    if (lower(value) == "none") {
        return out;
    }
    for (const auto& item : split_commas({std::string(value)})) {
        std::string_view rest = item;
        if (rest.starts_with("ssh://")) {
            rest.remove_prefix(6);
        }
        SshJump jump;
        if (auto at = rest.rfind('@'); at != std::string_view::npos) {
            jump.user = std::string(rest.substr(0, at));
            rest.remove_prefix(at + 1);
        }
        std::string_view port_text;
        if (rest.starts_with("[")) {
            auto close = rest.find(']');
            if (close == std::string_view::npos) {
                return fail(ErrorKind::config, what + ": `" + item + "` has an unclosed `[`");
            }
            jump.host = std::string(rest.substr(1, close - 1));
            auto after = rest.substr(close + 1);
            if (after.starts_with(":")) {
                port_text = after.substr(1);
            } else if (!after.empty()) {
                return fail(ErrorKind::config, what + ": `" + item + "` is not [user@]host[:port]");
            }
        } else if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
            jump.host = std::string(rest.substr(0, colon));
            port_text = rest.substr(colon + 1);
        } else {
            jump.host = std::string(rest);
        }
        if (jump.host.empty() || jump.host.find_first_of(" \t/") != std::string::npos) {
            return fail(ErrorKind::config, what + ": `" + item + "` is not [user@]host[:port]");
        }
        if (!port_text.empty()) {
            auto port = parse_port(port_text, what);
            if (!port) {
                return tl::unexpected(port.error());
            }
            jump.port = *port;
        }
        out.push_back(std::move(jump));
    }
    if (out.empty()) {
        return fail(ErrorKind::config, what + ": empty (write `none` for a direct connection)");
    }
    return out;
}

Result<std::string> expand_ssh_path(std::string_view value, const SshTokens& tokens,
                                    const std::string& what) {
    std::string out;
    if (value == "~" || value.starts_with("~/")) {
        out = tokens.home;
        value.remove_prefix(1);
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] != '%') {
            out += value[i];
            continue;
        }
        if (i + 1 == value.size()) {
            return fail(ErrorKind::config, what + ": `" + std::string(value) + "` ends with a lone %");
        }
        switch (value[++i]) {
        case '%':
            out += '%';
            break;
        case 'h':
            out += tokens.host;
            break;
        case 'u':
            out += tokens.local_user;
            break;
        case 'r':
            out += tokens.remote_user;
            break;
        case 'p':
            out += std::to_string(tokens.port);
            break;
        case 'd':
            out += tokens.home;
            break;
        default:
            return fail(ErrorKind::config, what + ": the token %" + std::string(1, value[i]) + " in `" +
                                               std::string(value) + "` is not supported (%h %u %r %p %d %%)");
        }
    }
    return out;
}

SshConfigSource file_system_source() {
    SshConfigSource source;
    source.read = [](const std::string& path) -> Result<std::optional<std::string>> {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) {
            return std::optional<std::string>();
        }
        if (S_ISDIR(st.st_mode)) {
            return fail(ErrorKind::config, path + ": is a folder, not an ssh config file");
        }
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            return fail(ErrorKind::config, path + ": cannot be read");
        }
        std::ostringstream text;
        text << in.rdbuf();
        return std::optional<std::string>(text.str());
    };
    source.glob = [](const std::string& pattern) {
        std::vector<std::string> out;
        glob_t g{};
        if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
            for (std::size_t i = 0; i < g.gl_pathc; ++i) {
                out.emplace_back(g.gl_pathv[i]);
            }
        }
        ::globfree(&g);
        return out;
    };
    return source;
}

} // namespace tandem::net
