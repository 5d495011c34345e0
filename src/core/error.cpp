#include "core/error.hpp"

namespace tandem {

std::string_view to_string(ErrorKind kind) {
    switch (kind) {
    case ErrorKind::invalid_spec:
        return "invalid_spec";
    case ErrorKind::config:
        return "config";
    case ErrorKind::usage:
        return "usage";
    case ErrorKind::not_found:
        return "not_found";
    case ErrorKind::unauthorized:
        return "unauthorized";
    case ErrorKind::unavailable:
        return "unavailable";
    case ErrorKind::timeout:
        return "timeout";
    case ErrorKind::remote:
        return "remote";
    case ErrorKind::internal:
        return "internal";
    }
    return "internal";
}

bool is_retryable(ErrorKind kind) {
    return kind == ErrorKind::unavailable || kind == ErrorKind::timeout;
}

} // namespace tandem
