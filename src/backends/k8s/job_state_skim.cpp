// The status List skimmer (see job_state_skim.hpp): a table of the members to keep, a scanner that steps
// over the rest, and a small builder for the kept values.

#include "backends/k8s/job_state_skim.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "backends/k8s/job_state_skim_text.hpp"
#include "backends/k8s/labels.hpp"

namespace tandem::k8s {

namespace {

using nlohmann::json;

// Which members of an object to keep. An array takes its elements' shape (conditions, containerStatuses).
struct Shape;
struct Member {
    std::string_view key;
    const Shape* shape; // nullptr: the whole value
};
struct Shape {
    std::span<const Member> members;
};

// Of the labels, the two job_state reads: a pod carries six, and each kept one is three allocations.
constexpr Member k_label_members[] = {{k_job_label, nullptr}, {k_rank_label, nullptr}};
constexpr Shape k_labels{k_label_members};
constexpr Member k_annotation_members[] = {{k_completion_index_annotation, nullptr}};
constexpr Shape k_annotations{k_annotation_members};
constexpr Member k_metadata_members[] = {{"name", nullptr},
                                         {"namespace", nullptr},
                                         {"uid", nullptr},
                                         {"resourceVersion", nullptr},
                                         {"creationTimestamp", nullptr},
                                         {"deletionTimestamp", nullptr},
                                         {"labels", &k_labels},
                                         {"annotations", &k_annotations}};
constexpr Shape k_metadata{k_metadata_members};
constexpr Member k_spec_members[] = {
    {"nodeName", nullptr}, {"completions", nullptr}, {"completionMode", nullptr}, {"parallelism", nullptr}};
constexpr Shape k_spec{k_spec_members};
constexpr Member k_container_status_members[] = {{"name", nullptr},
                                                 {"state", nullptr},
                                                 {"lastState", nullptr},
                                                 {"ready", nullptr},
                                                 {"restartCount", nullptr}};
constexpr Shape k_container_status{k_container_status_members};
constexpr Member k_status_members[] = {{"phase", nullptr},
                                       {"reason", nullptr},
                                       {"message", nullptr},
                                       {"conditions", nullptr},
                                       {"startTime", nullptr},
                                       {"completionTime", nullptr},
                                       {"active", nullptr},
                                       {"succeeded", nullptr},
                                       {"failed", nullptr},
                                       {"containerStatuses", &k_container_status},
                                       {"initContainerStatuses", &k_container_status}};
constexpr Shape k_status{k_status_members};
constexpr Member k_item_members[] = {{"apiVersion", nullptr},
                                     {"kind", nullptr},
                                     {"metadata", &k_metadata},
                                     {"spec", &k_spec},
                                     {"status", &k_status}};
constexpr Shape k_item{k_item_members};

// A service's Deployment as `serve status` reads it (backends/k8s/k8s_serve.cpp): its name, labels,
// annotations and counts, not its pod template (most of its bytes).
constexpr Member k_deployment_label_members[] = {{"tandem.dev/service", nullptr}};
constexpr Shape k_deployment_labels{k_deployment_label_members};
constexpr Member k_deployment_annotation_members[] = {
    {"tandem.dev/service-version", nullptr}, {"tandem.dev/autoscale", nullptr}, {"tandem.dev/endpoint", nullptr}};
constexpr Shape k_deployment_annotations{k_deployment_annotation_members};
constexpr Member k_deployment_metadata_members[] = {{"name", nullptr},
                                                    {"namespace", nullptr},
                                                    {"generation", nullptr},
                                                    {"creationTimestamp", nullptr},
                                                    {"deletionTimestamp", nullptr},
                                                    {"labels", &k_deployment_labels},
                                                    {"annotations", &k_deployment_annotations}};
constexpr Shape k_deployment_metadata{k_deployment_metadata_members};
constexpr Member k_deployment_spec_members[] = {{"replicas", nullptr}};
constexpr Shape k_deployment_spec{k_deployment_spec_members};
constexpr Member k_deployment_status_members[] = {{"observedGeneration", nullptr}, {"replicas", nullptr},
                                                  {"readyReplicas", nullptr},      {"updatedReplicas", nullptr},
                                                  {"availableReplicas", nullptr},  {"conditions", nullptr}};
constexpr Shape k_deployment_status{k_deployment_status_members};
constexpr Member k_deployment_members[] = {{"apiVersion", nullptr},
                                           {"kind", nullptr},
                                           {"metadata", &k_deployment_metadata},
                                           {"spec", &k_deployment_spec},
                                           {"status", &k_deployment_status}};
constexpr Shape k_deployment{k_deployment_members};

const Member* find_member(const Shape& shape, std::string_view key) {
    for (const Member& m : shape.members) {
        if (m.key == key) {
            return &m;
        }
    }
    return nullptr;
}

constexpr int k_max_depth = 64; // of a kept value; skipped subtrees need no recursion

// The bytes the skip loop stops at: quotes and brackets.
constexpr std::array<bool, 256> k_structural = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : std::string_view("\"{}[]")) {
        t[c] = true;
    }
    return t;
}();

class Skimmer {
public:
    explicit Skimmer(std::string_view text, const Shape* item = &k_item)
        : m_begin(text.data()), m_p(text.data()), m_end(text.data() + text.size()), m_item(item) {}

    Result<json> list() {
        json out = json::object();
        if (!list_members(out)) {
            return fail(ErrorKind::remote, m_error);
        }
        return out;
    }

private:
    bool error(std::string_view what) {
        if (m_error.empty()) {
            m_error = m_p >= m_end ? fmt::format("{} (truncated after {} bytes)", what, m_end - m_begin)
                                   : fmt::format("{} at byte {}", what, m_p - m_begin);
        }
        return false;
    }

    void space() {
        while (m_p < m_end && (*m_p == ' ' || *m_p == '\n' || *m_p == '\r' || *m_p == '\t')) {
            ++m_p;
        }
    }

    // Skips blanks and takes `c` if it is next.
    bool take(char c) {
        space();
        if (m_p < m_end && *m_p == c) {
            ++m_p;
            return true;
        }
        return false;
    }

    bool expect(char c) { return take(c) || error(fmt::format("expected '{}'", c)); }

    // At an opening quote: moves past the closing one, whose position memchr finds; a quote preceded by an
    // odd number of backslashes is escaped. `plain` tells whether the string had no backslash at all.
    bool skip_string(bool* plain = nullptr) {
        const char* start = ++m_p;
        bool escaped = false;
        for (;;) {
            const auto* q =
                static_cast<const char*>(std::memchr(m_p, '"', static_cast<std::size_t>(m_end - m_p)));
            if (q == nullptr) {
                m_p = m_end;
                return error("unterminated string");
            }
            std::size_t slashes = 0;
            while (q - slashes > start && q[-1 - static_cast<std::ptrdiff_t>(slashes)] == '\\') {
                ++slashes;
            }
            escaped = escaped || slashes > 0;
            m_p = q + 1;
            if (slashes % 2 == 0) {
                break;
            }
        }
        if (plain != nullptr) {
            *plain =
                !escaped && std::memchr(start, '\\', static_cast<std::size_t>(m_p - 1 - start)) == nullptr;
        }
        return true;
    }

    // Steps over one value of any kind, following only strings and brackets.
    bool skip_value() {
        space();
        if (m_p >= m_end) {
            return error("expected a value");
        }
        if (*m_p == '"') {
            return skip_string();
        }
        if (*m_p != '{' && *m_p != '[') {
            json ignored;
            return scalar(ignored);
        }
        m_stack.clear();
        for (;;) {
            while (m_p < m_end && !k_structural[static_cast<unsigned char>(*m_p)]) {
                ++m_p;
            }
            if (m_p >= m_end) {
                return error("unclosed object or array");
            }
            const char c = *m_p;
            if (c == '"') {
                if (!skip_string()) {
                    return false;
                }
                continue;
            }
            if (c == '{' || c == '[') {
                m_stack.push_back(c == '{' ? '}' : ']');
            } else if (m_stack.empty() || m_stack.back() != c) {
                return error(fmt::format("unexpected '{}'", c));
            } else {
                m_stack.pop_back();
            }
            ++m_p;
            if (m_stack.empty()) {
                return true;
            }
        }
    }

    // At an opening quote: the decoded string.
    bool string(std::string& out) {
        const char* start = m_p + 1;
        bool plain = false;
        if (!skip_string(&plain)) {
            return false;
        }
        const std::string_view raw(start, static_cast<std::size_t>(m_p - 1 - start));
        if (plain) {
            out.assign(raw);
        } else if (const auto bad = detail::unescape_json(raw, out); !bad.empty()) {
            return error(bad);
        }
        for (char c : raw) {
            if (static_cast<unsigned char>(c) < 0x20) {
                return error("control character in a string");
            }
        }
        return detail::valid_utf8(out) || error("invalid UTF-8 in a string");
    }

    // A number, true, false or null.
    bool scalar(json& out) {
        const char* start = m_p;
        auto word = [&](std::string_view w) {
            if (static_cast<std::size_t>(m_end - m_p) < w.size() || std::string_view(m_p, w.size()) != w) {
                return false;
            }
            m_p += w.size();
            return true;
        };
        if (word("true") || word("false")) {
            out = *start == 't';
            return true;
        }
        if (word("null")) {
            out = nullptr;
            return true;
        }
        auto digits = [&] {
            const char* from = m_p;
            while (m_p < m_end && *m_p >= '0' && *m_p <= '9') {
                ++m_p;
            }
            return m_p > from;
        };
        const bool negative = m_p < m_end && *m_p == '-';
        m_p += negative ? 1 : 0;
        const char* int_start = m_p;
        if (!digits() || (*int_start == '0' && m_p - int_start > 1)) {
            m_p = start;
            return error("expected a value");
        }
        bool integer = true;
        if (m_p < m_end && *m_p == '.') {
            ++m_p;
            integer = false;
            if (!digits()) {
                return error("bad number");
            }
        }
        if (m_p < m_end && (*m_p == 'e' || *m_p == 'E')) {
            ++m_p;
            integer = false;
            m_p += m_p < m_end && (*m_p == '+' || *m_p == '-') ? 1 : 0;
            if (!digits()) {
                return error("bad number");
            }
        }
        // As nlohmann reads them: non-negative integers unsigned, negative ones signed, else (or when
        // out of range) a double.
        if (integer && !negative) {
            std::uint64_t v = 0;
            if (std::from_chars(start, m_p, v).ec == std::errc()) {
                out = v;
                return true;
            }
        } else if (integer) {
            std::int64_t v = 0;
            if (std::from_chars(start, m_p, v).ec == std::errc()) {
                out = v;
                return true;
            }
        }
        double d = 0;
        const auto [end, ec] = std::from_chars(start, m_p, d);
        if (end != m_p || ec != std::errc()) {
            return error("bad number");
        }
        out = d;
        return true;
    }

    // One value; of an object, only the members `shape` lists (all when shape is nullptr).
    bool value(json& out, const Shape* shape, int depth) {
        space();
        if (m_p >= m_end) {
            return error("expected a value");
        }
        if (depth > k_max_depth) {
            return error("nested too deeply");
        }
        switch (*m_p) {
        case '{':
            return object(out, shape, depth);
        case '[':
            return array(out, shape, depth);
        case '"': {
            std::string s;
            if (!string(s)) {
                return false;
            }
            out = std::move(s);
            return true;
        }
        default:
            return scalar(out);
        }
    }

    // At '{': calls member(key) for each member; member consumes the value.
    template <typename F> bool members(F&& member) {
        ++m_p;
        if (take('}')) {
            return true;
        }
        std::string key;
        do {
            space();
            if (m_p >= m_end || *m_p != '"') {
                return error("expected a member name");
            }
            if (!string(key) || !expect(':') || !member(key)) {
                return false;
            }
        } while (take(','));
        return expect('}');
    }

    bool object(json& out, const Shape* shape, int depth) {
        out = json::object();
        return members([&](const std::string& key) {
            if (shape == nullptr) {
                return value(out[key], nullptr, depth + 1);
            }
            const Member* m = find_member(*shape, key);
            return m == nullptr ? skip_value() : value(out[key], m->shape, depth + 1);
        });
    }

    bool array(json& out, const Shape* shape, int depth) {
        out = json::array();
        ++m_p;
        if (take(']')) {
            return true;
        }
        do {
            if (!value(out.emplace_back(), shape, depth + 1)) {
                return false;
            }
        } while (take(','));
        return expect(']');
    }

    bool items(json& out) {
        space();
        if (m_p >= m_end || *m_p != '[') {
            return error("\"items\" is not an array");
        }
        out = json::array();
        ++m_p;
        if (take(']')) {
            return true;
        }
        do {
            space();
            if (m_p >= m_end || *m_p != '{') {
                return error("an item is not an object");
            }
            if (!object(out.emplace_back(), m_item, 1)) {
                return false;
            }
        } while (take(','));
        return expect(']');
    }

    bool list_members(json& out) {
        space();
        if (m_p >= m_end || *m_p != '{') {
            return error("not a JSON object");
        }
        bool ok = members([&](const std::string& key) {
            if (key == "items") {
                return items(out["items"]);
            }
            return key == "kind" || key == "apiVersion" || key == "metadata" ? value(out[key], nullptr, 1)
                                                                             : skip_value();
        });
        if (!ok) {
            return false;
        }
        space();
        if (m_p != m_end) {
            return error("text after the List");
        }
        return out.contains("items") || error("not a List (no \"items\")");
    }

    const char* m_begin;
    const char* m_p;
    const char* m_end;
    const Shape* m_item;
    std::string m_stack;
    std::string m_error;
};

} // namespace

Result<json> skim_status_list(std::string_view body) {
    return Skimmer(body).list();
}

Result<json> skim_deployment_list(std::string_view body) {
    return Skimmer(body, &k_deployment).list();
}

} // namespace tandem::k8s
