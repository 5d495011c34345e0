#pragma once
// Every key SkyPilot's task format accepts, in one table, with what tandem does with it. The spec loader
// asks this table about each key it meets, so a key SkyPilot accepts is never "unknown": it is read
// (`handled`), accepted and reported by `plan` as having no effect here (`ignored`), or refused with a
// precise reason (`cloud_only`, `not_yet`, `global_only`). Following a new SkyPilot key is one row.
//
// The reference is SkyPilot's sky/utils/schemas.py (task, resources, config schemas) and
// OVERRIDEABLE_CONFIG_KEYS_IN_TASK in sky/skylet/constants.py.

#include <string_view>
#include <vector>

namespace tandem {

enum class KeyUse {
    handled,     // tandem reads it; per-backend support is judged in backend_support.cpp
    ignored,     // accepted; it has no effect on Slurm, Kubernetes or this machine (the note says why)
    cloud_only,  // meaningful only for cloud VMs: refused
    not_yet,     // a SkyPilot feature tandem does not support yet: refused
    global_only, // SkyPilot takes it only in its global ~/.sky/config.yaml, never in a task: refused
    internal,    // SkyPilot writes it into tasks itself: accepted silently
};

struct SkyKey {
    std::string_view section; // "" (the task), "resources", "config", "config.kubernetes", ...
    std::string_view key;
    KeyUse use;
    std::string_view note; // the reason shown to the user (ignored, refused); empty for handled
};

// The row for `key` in `section`, or nullptr when neither SkyPilot nor tandem knows it.
const SkyKey* find_sky_key(std::string_view section, std::string_view key);

// Every key of `section`, for "did you mean".
std::vector<std::string_view> sky_keys_of(std::string_view section);

// The message for a refused key ("is a cloud-only field: ..."), or empty for handled/ignored/internal.
std::string refusal_message(const SkyKey& key);

// The whole table, for tests and the README's field list.
const std::vector<SkyKey>& sky_keys();

} // namespace tandem
