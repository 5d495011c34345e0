// The protobuf status List decoder (see job_state_proto.hpp): tables of the kept fields by number, and a
// reader that walks the wire format and jumps over everything else.

#include "backends/k8s/job_state_proto.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>

#include <fmt/format.h>

#include "backends/k8s/labels.hpp"
#include "core/json_text.hpp"

namespace tandem::k8s {

namespace {

using nlohmann::json;

enum class Type : std::uint8_t { string, int32, int64, boolean, time, message, string_map };

struct Message;
struct Field {
    std::uint32_t number;
    std::string_view key;
    Type type;
    const Message* message = nullptr; // Type::message: its fields
    bool repeated = false;
    // JSON writes this field even when it is 0/false/empty (no omitempty, or a pointer that is set).
    bool keep_zero = false;
    std::span<const std::string_view> keys = {}; // Type::string_map: the entries kept (the object always)
};
struct Message {
    std::span<const Field> fields;
};

constexpr bool k_repeated = true;
constexpr bool k_keep_zero = true;

// meta/v1 (the same labels and annotation as the skimmer keeps)
constexpr std::string_view k_kept_labels[] = {k_job_label, k_rank_label, k_user_label};
constexpr std::string_view k_kept_annotations[] = {k_completion_index_annotation, k_identity_annotation,
                                                   k_recover_codes_annotation, k_sweep_annotation};
constexpr Field k_object_meta_fields[] = {
    {1, "name", Type::string},
    {3, "namespace", Type::string},
    {5, "uid", Type::string},
    {6, "resourceVersion", Type::string},
    {8, "creationTimestamp", Type::time},
    {9, "deletionTimestamp", Type::time},
    {11, "labels", Type::string_map, nullptr, false, false, k_kept_labels},
    {12, "annotations", Type::string_map, nullptr, false, false, k_kept_annotations},
};
constexpr Message k_object_meta{k_object_meta_fields};
constexpr Field k_list_meta_fields[] = {{2, "resourceVersion", Type::string},
                                        {3, "continue", Type::string},
                                        {4, "remainingItemCount", Type::int64, nullptr, false, k_keep_zero}};
constexpr Message k_list_meta{k_list_meta_fields};
// PodCondition and JobCondition share their numbers.
constexpr Field k_condition_fields[] = {
    {1, "type", Type::string},        {2, "status", Type::string},
    {3, "lastProbeTime", Type::time}, {4, "lastTransitionTime", Type::time},
    {5, "reason", Type::string},      {6, "message", Type::string}};
constexpr Message k_condition{k_condition_fields};

// core/v1
constexpr Field k_waiting_fields[] = {{1, "reason", Type::string}, {2, "message", Type::string}};
constexpr Message k_waiting{k_waiting_fields};
constexpr Field k_running_fields[] = {{1, "startedAt", Type::time}};
constexpr Message k_running{k_running_fields};
constexpr Field k_terminated_fields[] = {
    {1, "exitCode", Type::int32, nullptr, false, k_keep_zero},
    {2, "signal", Type::int32},
    {3, "reason", Type::string},
    {4, "message", Type::string},
    {5, "startedAt", Type::time},
    {6, "finishedAt", Type::time},
    {7, "containerID", Type::string},
};
constexpr Message k_terminated{k_terminated_fields};
constexpr Field k_container_state_fields[] = {{1, "waiting", Type::message, &k_waiting},
                                              {2, "running", Type::message, &k_running},
                                              {3, "terminated", Type::message, &k_terminated}};
constexpr Message k_container_state{k_container_state_fields};
constexpr Field k_container_status_fields[] = {
    {1, "name", Type::string},
    {2, "state", Type::message, &k_container_state},
    {3, "lastState", Type::message, &k_container_state},
    {4, "ready", Type::boolean, nullptr, false, k_keep_zero},
    {5, "restartCount", Type::int32, nullptr, false, k_keep_zero},
};
constexpr Message k_container_status{k_container_status_fields};
constexpr Field k_pod_spec_fields[] = {{10, "nodeName", Type::string}};
constexpr Message k_pod_spec{k_pod_spec_fields};
constexpr Field k_pod_status_fields[] = {
    {1, "phase", Type::string},
    {2, "conditions", Type::message, &k_condition, k_repeated},
    {3, "message", Type::string},
    {4, "reason", Type::string},
    {7, "startTime", Type::time},
    {8, "containerStatuses", Type::message, &k_container_status, k_repeated},
    {10, "initContainerStatuses", Type::message, &k_container_status, k_repeated},
};
constexpr Message k_pod_status{k_pod_status_fields};
constexpr Field k_pod_fields[] = {{1, "metadata", Type::message, &k_object_meta},
                                  {2, "spec", Type::message, &k_pod_spec},
                                  {3, "status", Type::message, &k_pod_status}};
constexpr Message k_pod{k_pod_fields};

// batch/v1 (parallelism and completions are pointers: set means written, even 0)
constexpr Field k_job_spec_fields[] = {{1, "parallelism", Type::int32, nullptr, false, k_keep_zero},
                                       {2, "completions", Type::int32, nullptr, false, k_keep_zero},
                                       {9, "completionMode", Type::string}};
constexpr Message k_job_spec{k_job_spec_fields};
constexpr Field k_job_status_fields[] = {
    {1, "conditions", Type::message, &k_condition, k_repeated},
    {2, "startTime", Type::time},
    {3, "completionTime", Type::time},
    {4, "active", Type::int32},
    {5, "succeeded", Type::int32},
    {6, "failed", Type::int32},
    {10, "failedIndexes", Type::string},
};
constexpr Message k_job_status{k_job_status_fields};
constexpr Field k_job_fields[] = {{1, "metadata", Type::message, &k_object_meta},
                                  {2, "spec", Type::message, &k_job_spec},
                                  {3, "status", Type::message, &k_job_status}};
constexpr Message k_job{k_job_fields};

// The Lists, by their kind.
constexpr Field k_pod_list_fields[] = {{1, "metadata", Type::message, &k_list_meta},
                                       {2, "items", Type::message, &k_pod, k_repeated}};
constexpr Field k_job_list_fields[] = {{1, "metadata", Type::message, &k_list_meta},
                                       {2, "items", Type::message, &k_job, k_repeated}};
constexpr Message k_pod_list{k_pod_list_fields};
constexpr Message k_job_list{k_job_list_fields};

// meta/v1 Status (an error answer)
constexpr Field k_status_fields[] = {{2, "status", Type::string},
                                     {3, "message", Type::string},
                                     {4, "reason", Type::string},
                                     {6, "code", Type::int32}};
constexpr Message k_status{k_status_fields};

// runtime.Unknown, the envelope
constexpr std::string_view k_magic{"k8s\0", 4};
enum Wire : std::uint8_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

// The earliest and latest instants RFC 3339 can write (0001-01-01, 9999-12-31T23:59:59).
constexpr std::int64_t k_min_seconds = -62135596800;
constexpr std::int64_t k_max_seconds = 253402300799;

class Decoder {
public:
    explicit Decoder(std::string_view body)
        : m_begin(reinterpret_cast<const std::uint8_t*>(body.data())), m_end(m_begin + body.size()) {}

    // The envelope: the raw object and its kind.
    bool envelope(std::string_view& raw, std::string& api_version, std::string& kind) {
        if (m_end - m_begin < 4 || std::string_view(reinterpret_cast<const char*>(m_begin), 4) != k_magic) {
            return error(m_begin, "no protobuf envelope (\"k8s\\0\")");
        }
        const std::uint8_t* p = m_begin + 4;
        std::string encoding;
        while (p < m_end) {
            std::uint32_t number = 0;
            std::uint8_t wire = 0;
            std::string_view bytes;
            if (!key(p, m_end, number, wire)) {
                return false;
            }
            if ((number >= 1 && number <= 4) && wire != Wire::length) {
                return error(p, fmt::format("envelope field {} has wire type {}", number, wire));
            }
            if (number == 1) {
                if (!take_bytes(p, m_end, bytes) || !type_meta(bytes, api_version, kind)) {
                    return false;
                }
            } else if (number == 2) {
                if (!take_bytes(p, m_end, raw)) {
                    return false;
                }
            } else if (number == 3) {
                if (!take_bytes(p, m_end, bytes)) {
                    return false;
                }
                encoding = std::string(bytes);
            } else if (!skip(p, m_end, wire)) {
                return false;
            }
        }
        if (!encoding.empty()) {
            return error(m_end, fmt::format("unsupported content encoding '{}'", printable(encoding)));
        }
        return true;
    }

    // The fields of `m` in [p, end) into the object `out`.
    bool message(const std::uint8_t* p, const std::uint8_t* end, const Message& m, json& out) {
        if (!out.is_object()) {
            out = json::object();
        }
        while (p < end) {
            std::uint32_t number = 0;
            std::uint8_t wire = 0;
            if (!key(p, end, number, wire)) {
                return false;
            }
            const Field* f = find(m, number);
            if (f == nullptr) {
                if (!skip(p, end, wire)) {
                    return false;
                }
                continue;
            }
            const bool scalar = f->type == Type::int32 || f->type == Type::int64 || f->type == Type::boolean;
            if (wire != (scalar ? Wire::varint : Wire::length)) {
                return error(p, fmt::format("field '{}' has wire type {}", f->key, wire));
            }
            if (!field(p, end, *f, out)) {
                return false;
            }
        }
        return true;
    }

    const std::string& error_text() const { return m_error; }

private:
    bool error(const std::uint8_t* at, std::string_view what) {
        if (m_error.empty()) {
            m_error = at >= m_end ? fmt::format("{} (at the end, {} bytes)", what, m_end - m_begin)
                                  : fmt::format("{} at byte {}", what, at - m_begin);
        }
        return false;
    }

    static std::string printable(std::string_view s) {
        std::string out;
        for (char c : s.substr(0, 40)) {
            out += c >= 0x20 && c < 0x7f ? c : '?';
        }
        return out;
    }

    static const Field* find(const Message& m, std::uint32_t number) {
        for (const Field& f : m.fields) {
            if (f.number == number) {
                return &f;
            }
        }
        return nullptr;
    }

    bool varint(const std::uint8_t*& p, const std::uint8_t* end, std::uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p >= end) {
                return error(p, "truncated varint");
            }
            const std::uint8_t b = *p++;
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return true;
            }
        }
        return error(p, "varint longer than 10 bytes");
    }

    bool key(const std::uint8_t*& p, const std::uint8_t* end, std::uint32_t& number, std::uint8_t& wire) {
        const std::uint8_t* at = p;
        std::uint64_t k = 0;
        if (!varint(p, end, k)) {
            return false;
        }
        number = static_cast<std::uint32_t>(k >> 3);
        wire = static_cast<std::uint8_t>(k & 7);
        if (number == 0 || (k >> 3) > 0x1fffffff) {
            return error(at, "bad field number");
        }
        return true;
    }

    bool take_bytes(const std::uint8_t*& p, const std::uint8_t* end, std::string_view& out) {
        std::uint64_t n = 0;
        if (!varint(p, end, n)) {
            return false;
        }
        if (n > static_cast<std::uint64_t>(end - p)) {
            return error(p, fmt::format("a length of {} runs past the end of its message", n));
        }
        out = std::string_view(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
        p += n;
        return true;
    }

    bool skip(const std::uint8_t*& p, const std::uint8_t* end, std::uint8_t wire) {
        std::uint64_t v = 0;
        std::string_view bytes;
        switch (wire) {
        case Wire::varint:
            return varint(p, end, v);
        case Wire::length:
            return take_bytes(p, end, bytes);
        case Wire::fixed64:
        case Wire::fixed32: {
            const std::ptrdiff_t n = wire == Wire::fixed64 ? 8 : 4;
            if (end - p < n) {
                return error(p, "truncated fixed-size field");
            }
            p += n;
            return true;
        }
        default:
            return error(p, fmt::format("unsupported wire type {}", wire));
        }
    }

    bool text(const std::uint8_t*& p, const std::uint8_t* end, std::string_view key, std::string_view& s) {
        const std::uint8_t* at = p;
        if (!take_bytes(p, end, s)) {
            return false;
        }
        return json_text::valid_utf8(s) || error(at, fmt::format("invalid UTF-8 in '{}'", key));
    }

    bool type_meta(std::string_view bytes, std::string& api_version, std::string& kind) {
        json meta = json::object();
        static constexpr Field fields[] = {{1, "apiVersion", Type::string}, {2, "kind", Type::string}};
        const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
        if (!message(p, p + bytes.size(), Message{fields}, meta)) {
            return false;
        }
        api_version = meta.value("apiVersion", "");
        kind = meta.value("kind", "");
        return true;
    }

    // A Time: RFC 3339 in seconds as metav1.Time writes it; the zero Time (an empty message) is null.
    bool time(std::string_view bytes, const std::uint8_t* at, json& out) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
        const auto* end = p + bytes.size();
        std::int64_t seconds = 0;
        bool any = false;
        while (p < end) {
            std::uint32_t number = 0;
            std::uint8_t wire = 0;
            std::uint64_t v = 0;
            if (!key(p, end, number, wire)) {
                return false;
            }
            if ((number == 1 || number == 2) && wire != Wire::varint) {
                return error(p, fmt::format("a timestamp field has wire type {}", wire));
            }
            if (number == 1 || number == 2) {
                if (!varint(p, end, v)) {
                    return false;
                }
                any = true;
                if (number == 1) {
                    seconds = static_cast<std::int64_t>(v);
                }
            } else if (!skip(p, end, wire)) {
                return false;
            }
        }
        if (!any) {
            out = nullptr;
            return true;
        }
        if (seconds < k_min_seconds || seconds > k_max_seconds) {
            return error(at, fmt::format("timestamp {} s is out of range", seconds));
        }
        using namespace std::chrono;
        const sys_seconds t{std::chrono::seconds(seconds)};
        const auto day = floor<days>(t);
        const year_month_day ymd{day};
        const hh_mm_ss hms{t - day};
        // "YYYY-MM-DDTHH:MM:SSZ" by hand: fmt's parse of the pattern showed in profiles.
        char text[] = "0000-00-00T00:00:00Z";
        const auto put = [&text](std::size_t pos, unsigned value, int digits) {
            for (int i = digits - 1; i >= 0; --i, value /= 10) {
                text[pos + static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
            }
        };
        put(0, static_cast<unsigned>(static_cast<int>(ymd.year())), 4);
        put(5, static_cast<unsigned>(ymd.month()), 2);
        put(8, static_cast<unsigned>(ymd.day()), 2);
        put(11, static_cast<unsigned>(hms.hours().count()), 2);
        put(14, static_cast<unsigned>(hms.minutes().count()), 2);
        put(17, static_cast<unsigned>(hms.seconds().count()), 2);
        out = std::string(text, sizeof text - 1);
        return true;
    }
    bool map_entry(std::string_view bytes, const Field& f, json& out) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
        const auto* end = p + bytes.size();
        std::string_view k;
        std::string_view v;
        while (p < end) {
            std::uint32_t number = 0;
            std::uint8_t wire = 0;
            if (!key(p, end, number, wire)) {
                return false;
            }
            if ((number == 1 || number == 2) && wire != Wire::length) {
                return error(p, fmt::format("an entry of '{}' has wire type {}", f.key, wire));
            }
            if (number == 1 || number == 2) {
                if (!text(p, end, f.key, number == 1 ? k : v)) {
                    return false;
                }
            } else if (!skip(p, end, wire)) {
                return false;
            }
        }
        if (std::find(f.keys.begin(), f.keys.end(), k) != f.keys.end()) {
            out[std::string(k)] = std::string(v);
        }
        return true;
    }

    // An empty value is left out, as JSON's omitempty does; it also undoes an earlier occurrence of the
    // field (the last one wins), which costs a lookup but no allocation.
    static void drop(json& out, std::string_view key) {
        if (auto it = out.find(key); it != out.end()) {
            out.erase(it);
        }
    }

    bool field(const std::uint8_t*& p, const std::uint8_t* end, const Field& f, json& out) {
        const std::uint8_t* at = p;
        std::uint64_t v = 0;
        std::string_view bytes;
        switch (f.type) {
        case Type::int32:
        case Type::int64:
        case Type::boolean: {
            if (!varint(p, end, v)) {
                return false;
            }
            json value;
            if (f.type == Type::boolean) {
                value = v != 0;
            } else if (f.type == Type::int32) {
                value = static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
            } else {
                value = static_cast<std::int64_t>(v);
            }
            if (v != 0 || f.keep_zero) {
                out[std::string(f.key)] = std::move(value);
            } else {
                drop(out, f.key);
            }
            return true;
        }
        case Type::string:
            if (!text(p, end, f.key, bytes)) {
                return false;
            }
            if (bytes.empty()) {
                drop(out, f.key);
            } else {
                out[std::string(f.key)] = std::string(bytes);
            }
            return true;
        case Type::time:
            return take_bytes(p, end, bytes) && time(bytes, at, out[std::string(f.key)]);
        case Type::string_map: {
            json& map = out[std::string(f.key)];
            if (!map.is_object()) {
                map = json::object();
            }
            return take_bytes(p, end, bytes) && map_entry(bytes, f, map);
        }
        case Type::message: {
            if (!take_bytes(p, end, bytes)) {
                return false;
            }
            json& slot = out[std::string(f.key)];
            json* target = &slot;
            if (f.repeated) {
                if (!slot.is_array()) {
                    slot = json::array();
                }
                target = &slot.emplace_back(json::object());
            }
            const auto* inner = reinterpret_cast<const std::uint8_t*>(bytes.data());
            return message(inner, inner + bytes.size(), *f.message, *target);
        }
        }
        return error(at, "unknown field type");
    }

    const std::uint8_t* m_begin;
    const std::uint8_t* m_end;
    std::string m_error;
};

Result<json> decode(std::string_view body, bool want_list) {
    Decoder d(body);
    std::string_view raw;
    std::string api_version;
    std::string kind;
    if (!d.envelope(raw, api_version, kind)) {
        return fail(ErrorKind::remote, d.error_text());
    }
    const Message* m = nullptr;
    if (want_list) {
        m = kind == "PodList" ? &k_pod_list : kind == "JobList" ? &k_job_list : nullptr;
    } else if (kind == "Status") {
        m = &k_status;
    }
    if (m == nullptr) {
        std::string shown = kind.empty() ? std::string("(none)") : kind.substr(0, 40);
        std::replace_if(
            shown.begin(), shown.end(),
            [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }, '?');
        return fail(ErrorKind::remote,
                    fmt::format("an unexpected object of kind '{}' in the envelope", shown));
    }
    json out = json::object();
    const auto* p = reinterpret_cast<const std::uint8_t*>(raw.data());
    if (!d.message(p, p + raw.size(), *m, out)) {
        return fail(ErrorKind::remote, d.error_text());
    }
    out["apiVersion"] = api_version;
    out["kind"] = kind;
    if (want_list && !out.contains("items")) {
        out["items"] = json::array();
    }
    return out;
}

} // namespace

Result<json> decode_status_list(std::string_view body) {
    return decode(body, true);
}

Result<json> decode_status_object(std::string_view body) {
    return decode(body, false);
}

} // namespace tandem::k8s
