#pragma once
// Reading large JSON answers without building a DOM of all of them: the one scanner under Kubernetes'
// List skimmer (backends/k8s/job_state_skim.hpp) and Slurm's GET /jobs skimmer (backends/slurm/
// jobs_skim.hpp). Even nlohmann's callback parse lexes every byte into tokens, so the scanner walks the
// text itself: it steps over subtrees nobody reads following only strings (memchr to the next quote) and
// bracket nesting, and builds JSON values only for the members a Shape keeps.
//
// It trusts nothing: every step checks bounds, kept strings are unescaped and checked as UTF-8, kept
// numbers must be JSON numbers (read as nlohmann reads them), brackets must match, and kept values nest at
// most 64 deep. Inside skipped subtrees only strings and brackets are checked (that is what makes it
// fast), so some invalid JSON there goes unnoticed; nothing of it is read. The first error is kept with
// the byte it was found at ("expected ':' at byte 12", "unterminated string (truncated after 80 bytes)").

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tandem::json_skim {

// Which members of an object to keep. An array takes its elements' shape (conditions, containerStatuses).
struct Shape;
struct Member {
    std::string_view key;
    const Shape* shape; // nullptr: the whole value
};
struct Shape {
    std::span<const Member> members;
    // Members not listed above are kept whole when this says so (nullptr: none is).
    bool (*keep_whole)(std::string_view key) = nullptr;
};

// The depth a kept value may reach; skipped subtrees need no recursion.
inline constexpr int k_max_depth = 64;

class Scanner {
public:
    explicit Scanner(std::string_view text)
        : m_begin(text.data()), m_p(text.data()), m_end(text.data() + text.size()) {}

    // Skips blanks and takes `c` if it is next.
    bool take(char c) {
        space();
        if (m_p < m_end && *m_p == c) {
            ++m_p;
            return true;
        }
        return false;
    }
    // take(c), or the error "expected 'c'".
    bool expect(char c);
    // Skips blanks; whether `c` is next (not taken).
    bool next_is(char c) {
        space();
        return m_p < m_end && *m_p == c;
    }
    // Skips blanks; whether the text is all read.
    bool at_end() {
        space();
        return m_p == m_end;
    }

    // Steps over one value of any kind, following only strings and brackets.
    bool skip_value();
    // One value into `out`; of an object, only the members `shape` keeps (all when shape is nullptr).
    bool value(nlohmann::json& out, const Shape* shape, int depth);
    // At '{': calls member(key) for each member (key a const std::string&); member consumes the value.
    template <typename F> bool members(F&& member);

    // Records `what` at the current byte (the first error wins); always false, to return.
    bool error(std::string_view what);
    const std::string& error_text() const { return m_error; }

private:
    void space() {
        while (m_p < m_end && (*m_p == ' ' || *m_p == '\n' || *m_p == '\r' || *m_p == '\t')) {
            ++m_p;
        }
    }
    bool skip_string(bool* plain = nullptr);
    bool string(std::string& out);
    bool scalar(nlohmann::json& out);
    bool object(nlohmann::json& out, const Shape* shape, int depth);
    bool array(nlohmann::json& out, const Shape* shape, int depth);

    const char* m_begin;
    const char* m_p;
    const char* m_end;
    std::string m_stack;
    std::string m_error;
};

template <typename F> bool Scanner::members(F&& member) {
    ++m_p;
    if (take('}')) {
        return true;
    }
    std::string key;
    do {
        if (!next_is('"')) {
            return error("expected a member name");
        }
        if (!string(key) || !expect(':') || !member(static_cast<const std::string&>(key))) {
            return false;
        }
    } while (take(','));
    return expect('}');
}

} // namespace tandem::json_skim
