// Whole-task checks against the configured backends: a field that no configured cluster kind can honour
// is reported once, with each kind's reason, at the place the field was written.

#include <map>
#include <set>

#include <fmt/format.h>

#include "core/backend_support.hpp"
#include "core/spec_loader.hpp"

namespace tandem {

std::vector<Diagnostic> check_backend_support(const TaskSpec& spec, const std::vector<BackendKind>& kinds) {
    std::vector<Diagnostic> out;
    if (kinds.empty()) {
        return out;
    }
    // field -> one reason per kind (a field may be unsupported by one option's kind and not another's)
    std::map<std::string, std::map<BackendKind, std::string>> reasons;
    for (const auto& option : spec.options()) {
        if (!option.resources.cloud_only.empty()) {
            continue; // needs a cloud: a rejection in `plan`, refused at load when nothing else is left
        }
        for (auto kind : kinds) {
            auto unsupported = unsupported_fields(spec, option.resources, kind);
            if (unsupported.empty()) {
                return {}; // at least one (option, kind) pair can run the task
            }
            for (const auto& u : unsupported) {
                reasons[u.field].emplace(kind, u.reason);
            }
        }
    }
    for (const auto& [field, by_kind] : reasons) {
        std::string message;
        for (const auto& [kind, reason] : by_kind) {
            message += (message.empty() ? "" : "; ") + reason;
        }
        out.push_back(Diagnostic{spec.location_of(field), field, message});
    }
    return out;
}

} // namespace tandem
