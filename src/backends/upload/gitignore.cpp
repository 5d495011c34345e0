// gitignore(5) matching (see gitignore.hpp).

#include "backends/upload/gitignore.hpp"

namespace tandem::upload {

namespace {

// `[...]` at the start of `p` against `c`; `len` gets the class's length. False when malformed.
bool match_class(std::string_view p, char c, std::size_t& len, bool& ok) {
    std::size_t i = 1;
    bool negate = false;
    if (i < p.size() && (p[i] == '!' || p[i] == '^')) {
        negate = true;
        ++i;
    }
    bool hit = false;
    bool first = true;
    for (; i < p.size() && (first || p[i] != ']'); ++i, first = false) {
        char lo = p[i];
        if (lo == '\\' && i + 1 < p.size()) {
            lo = p[++i];
        }
        char hi = lo;
        if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
            hi = p[i + 2];
            i += 2;
        }
        hit = hit || (c >= lo && c <= hi);
    }
    ok = i < p.size();
    len = i + 1;
    return hit != negate;
}

// What follows a `*`: `p` matches `s` from some point on within the current path segment.
bool star_match(std::string_view p, std::string_view s) {
    for (std::size_t i = 0; i <= s.size(); ++i) {
        if (glob_match(p, s.substr(i))) {
            return true;
        }
        if (i < s.size() && s[i] == '/') {
            return false;
        }
    }
    return false;
}

} // namespace

bool glob_match(std::string_view p, std::string_view s) {
    while (!p.empty()) {
        if (p.substr(0, 2) == "**") {
            p.remove_prefix(2);
            if (p.empty()) {
                return true; // "x/**": everything below
            }
            if (p.front() == '/') {
                p.remove_prefix(1); // "**/": zero or more folders
                for (std::size_t i = 0;; ++i) {
                    if (glob_match(p, s.substr(i))) {
                        return true;
                    }
                    i = s.find('/', i);
                    if (i == std::string_view::npos) {
                        return false;
                    }
                }
            }
            return star_match(p, s); // "**" glued to other text acts as "*"
        }
        const char c = p.front();
        if (c == '*') {
            p.remove_prefix(1);
            return star_match(p, s);
        }
        if (s.empty()) {
            return false;
        }
        if (c == '?') {
            if (s.front() == '/') {
                return false;
            }
        } else if (c == '[') {
            std::size_t len = 0;
            bool ok = false;
            const bool hit = match_class(p, s.front(), len, ok);
            if (ok) {
                if (!hit || s.front() == '/') {
                    return false;
                }
                p.remove_prefix(len);
                s.remove_prefix(1);
                continue;
            }
            if (s.front() != '[') { // a lone '[' is itself
                return false;
            }
        } else if (c == '\\' && p.size() > 1) {
            p.remove_prefix(1);
            if (s.front() != p.front()) {
                return false;
            }
        } else if (c != s.front()) {
            return false;
        }
        p.remove_prefix(1);
        s.remove_prefix(1);
    }
    return s.empty();
}

void GitIgnore::add(std::string_view text, const std::string& base) {
    while (!text.empty()) {
        const auto nl = text.find('\n');
        std::string line(text.substr(0, nl));
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        // Trailing spaces go unless escaped with a backslash.
        while (!line.empty() && line.back() == ' ' && !(line.size() > 1 && line[line.size() - 2] == '\\')) {
            line.pop_back();
        }
        if (line.empty() || line.front() == '#') {
            continue;
        }
        Rule r;
        r.base = base;
        if (line.front() == '!') {
            r.negate = true;
            line.erase(0, 1);
        } else if (line.rfind("\\!", 0) == 0 || line.rfind("\\#", 0) == 0) {
            line.erase(0, 1);
        }
        if (!line.empty() && line.back() == '/') {
            r.dir_only = true;
            line.pop_back();
        }
        // A slash at the start or in the middle anchors the pattern to its .gitignore's folder.
        r.anchored = line.find('/') != std::string::npos;
        if (!line.empty() && line.front() == '/') {
            line.erase(0, 1);
        }
        if (line.empty()) {
            continue;
        }
        r.pattern = std::move(line);
        m_rules.push_back(std::move(r));
    }
}

bool GitIgnore::ignored(std::string_view path, bool is_dir) const {
    bool result = false;
    for (const auto& r : m_rules) {
        if (r.dir_only && !is_dir) {
            continue;
        }
        std::string_view rel = path;
        if (!r.base.empty()) {
            if (rel.substr(0, r.base.size()) != r.base || rel.size() <= r.base.size() ||
                rel[r.base.size()] != '/') {
                continue;
            }
            rel.remove_prefix(r.base.size() + 1);
        }
        bool hit = false;
        if (r.anchored) {
            hit = glob_match(r.pattern, rel);
        } else {
            const auto slash = rel.rfind('/');
            hit = glob_match(r.pattern, slash == std::string_view::npos ? rel : rel.substr(slash + 1));
        }
        if (hit) {
            result = !r.negate;
        }
    }
    return result;
}

} // namespace tandem::upload
