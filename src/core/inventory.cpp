#include "core/inventory.hpp"

namespace tandem {

std::string_view to_string(BackendKind kind) {
    switch (kind) {
    case BackendKind::local:
        return "local";
    case BackendKind::slurm:
        return "slurm";
    case BackendKind::kubernetes:
        return "k8s";
    }
    return "local";
}

std::optional<BackendKind> backend_kind_from_string(std::string_view text) {
    if (text == "local") {
        return BackendKind::local;
    }
    if (text == "slurm") {
        return BackendKind::slurm;
    }
    if (text == "k8s" || text == "kubernetes") {
        return BackendKind::kubernetes;
    }
    return std::nullopt;
}

} // namespace tandem
