#pragma once
// Reading a List of Jobs or pods for the state mapping without building a DOM of it. A tandem pod as a
// v1.20 API server sends it is about 9 KB (managedFields, the container spec with its command and
// environment, volumes, tolerations); job_state.cpp reads a few hundred bytes of it. Even nlohmann's
// callback parse lexes every byte into tokens (4 ms for 100 pods), so the skimmer walks the text itself:
// it steps over subtrees nobody reads with a scanner that follows only strings (memchr to the next quote)
// and bracket nesting, and builds JSON values only for the members in its table (job_state_skim.cpp; the
// scanner is core/json_skim.hpp, which Slurm's GET /jobs skimmer shares).
//
// What is kept, per item: metadata (name, namespace, uid, resourceVersion, creationTimestamp,
// deletionTimestamp, the labels tandem.dev/job, tandem.dev/rank and tandem.dev/user, the completion-index
// and tandem.dev/identity annotations: discovery reads the same lists);
// spec (nodeName, completions, completionMode, parallelism); status (phase, reason, message, conditions,
// startTime, completionTime, active, succeeded, failed, and of each container status: name, state,
// lastState, ready, restartCount). The result has the List's shape, so group_by_tandem_job reads it unchanged, and
// on valid JSON it equals the full parse with everything else removed.
//
// It trusts nothing about the text: every step checks bounds, kept strings are unescaped and checked as
// UTF-8, kept numbers must be JSON numbers, brackets must match, and nesting is limited. Inside skipped
// subtrees only strings and brackets are checked (that is what makes it fast), so some invalid JSON
// there goes unnoticed; nothing of it is read.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tandem::k8s {

// The List in `body` (an object whose "items" is an array of objects) with only the members above.
// Errors (ErrorKind::remote) say what was wrong and at which byte: "truncated", "expected ':'",
// "items is not an array", "invalid UTF-8 in a string", ...
Result<nlohmann::json> skim_status_list(std::string_view body);

// The same for a List of Deployments as `serve status` reads them: metadata (name, namespace, generation,
// creationTimestamp, deletionTimestamp, the label tandem.dev/service, the annotations
// tandem.dev/service-version, tandem.dev/autoscale, tandem.dev/endpoint), spec.replicas, and status
// (observedGeneration, replicas, readyReplicas, updatedReplicas, availableReplicas, conditions).
Result<nlohmann::json> skim_deployment_list(std::string_view body);

} // namespace tandem::k8s
