#pragma once
// The status Lists in Kubernetes' protobuf encoding, the one client-go asks for. For 100 pods the API
// server writes 400 KB of protobuf about 4 ms faster than 880 KB of JSON, and reading it is a walk over
// length-prefixed fields: managedFields, the container spec and the volumes are jumped over whole.
//
// The decoder produces exactly the JSON shape skim_status_list (job_state_skim.hpp) keeps, so
// group_by_tandem_job reads either: the same members, and the JSON encoding's rules for them (empty
// strings and omitempty zeros left out, a zero Time as null, timestamps as RFC 3339 seconds). A test
// against the real API server compares the two on the same pods and Jobs.
//
// The envelope is "k8s\0" and a runtime.Unknown {typeMeta, raw, contentEncoding, contentType}; raw is a
// PodList or JobList. Field numbers are from k8s.io/api's generated.proto (core/v1, batch/v1) and
// apimachinery's (meta/v1, runtime); they never change. Like the skimmer it trusts nothing: every length
// and varint is bounds-checked, kept strings must be UTF-8, a known field with the wrong wire type is an
// error, and unknown fields of any wire type but groups are stepped over.

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tandem::k8s {

// The media type of Kubernetes' protobuf encoding (the Content-Type of such an answer).
inline constexpr std::string_view k_protobuf_media_type = "application/vnd.kubernetes.protobuf";

// A PodList or JobList in the protobuf envelope, as {"apiVersion", "kind", "metadata", "items": [...]}
// with the members skim_status_list keeps. Errors (ErrorKind::remote) say what and at which byte.
Result<nlohmann::json> decode_status_list(std::string_view body);

// A meta/v1 Status in the protobuf envelope (the body of an error answer), as the JSON Status
// {"kind": "Status", "apiVersion", "status", "message", "reason", "code"} (empty members left out).
Result<nlohmann::json> decode_status_object(std::string_view body);

} // namespace tandem::k8s
