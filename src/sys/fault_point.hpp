#pragma once
// Fault injection for tandem's own reliability tests (tests/integration/test_faults.cpp,
// docs/RELIABILITY.md): with TANDEM_FAULT=<point> in the environment, reaching that point kills the process
// with SIGKILL, as a crash or `kill -9` would, at an exact step; TANDEM_FAULT=<point>:stop stops it there
// (SIGSTOP) for the test to act meanwhile and continue it; TANDEM_FAULT=<point>#<n> acts at the n-th time
// the point is reached (a group's members pass the same points). Without the variable this is one cached
// getenv. The points:
//   launch.recorded   the job is in the store, nothing submitted yet
//   launch.submitted  the backend took the job; its remote id is not stored yet
//   launch.stored     the remote id is stored; launch has not said so
//   k8s.first-job     Kubernetes: the first Job is created, the rest of the job (Jobs, Service, Secret) not
//   cancel.remote     cancel: the backend cancelled the job; the store does not say so yet
//   store.write       inside a store write transaction, before its COMMIT
//   group.recorded           a group's row is stored (its lock held), no member yet
//   group.member-recorded    a member is stored (each member passes it), not submitted
//   group.member-submitted   a member's cluster took it (each, on its cluster's thread); no remote id stored
//   (then each member passes launch.recorded, launch.submitted and launch.stored in turn)

#include <string_view>

namespace tandem::sys {

void fault_point(std::string_view point);

} // namespace tandem::sys
