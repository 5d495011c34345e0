#pragma once
// Services (`tandem serve`): SkyPilot's `service:` tasks as native Kubernetes objects. The store records
// which cluster and namespace hold a service; its state is read from the cluster each time (nothing of
// tandem's keeps running). The CLI (cli/cmd_serve.cpp) keeps the flags, the tables and the JSON.

#include <string>
#include <utility>
#include <vector>

#include "app/session.hpp"
#include "core/planner.hpp"
#include "core/service.hpp"

namespace tandem::app {

struct ServiceRow {
    store::ServiceRecord record;
    ServiceView view;
    bool unreachable = false;
    std::string unreachable_reason;
};

// Every recorded service (or only `name`), as its cluster reports it now (one backend call per
// cluster); with `replicas`, their pods.
Result<std::vector<ServiceRow>> service_rows(Session& session, const std::string& name, bool replicas);

// The recorded service `name`, or not_found with the hint that lists them.
Result<store::ServiceRecord> find_service(Session& session, const std::string& name);
// The recorded service and its cluster's services.
Result<std::pair<store::ServiceRecord, Services*>> service_and_backend(Session& session, const std::string& name);
// The services of `cluster`'s backend, or the refusal of one that has none.
Result<Services*> services_of(Session& session, const std::string& cluster);
ServiceRef ref_of(const store::ServiceRecord& r);

// Polls the service until it is READY on `version` (every replica of that version ready), or the
// timeout passes (a `timeout` error with the status and the hint). Each change goes to the session's
// progress.
Status wait_ready(Session& session, const std::string& name, int version, int timeout_seconds);

// The placement of `spec` on `cluster`, or the best one when `cluster` is empty (serve update keeps a
// service where it is).
Result<Placement> placement_on(Session& session, TaskSpec spec, const std::string& cluster);

} // namespace tandem::app
