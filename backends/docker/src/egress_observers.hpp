#pragma once
// The proxy's decisions, routed to the core's observers (docs/observability.md): the
// backend's egress observer becomes one that first hands each decision to the observer hub
// the router attached to, then calls whatever the host configured.
#include <memory>

#include "maf/sandbox/docker/egress_events.hpp"
#include "maf/sandbox/observer.hpp"

namespace maf::sandbox::docker::detail {

/// One NetworkDecisionEvent per decision of `event` (backend "docker", the proxy's key),
/// delivered to `hub`; then `host_observer`, if set. The hub never throws, so the host's
/// observer runs whatever an observer of the hub did.
EgressObserver with_core_observers(EgressObserver host_observer, std::shared_ptr<ObserverHub> hub);

}  // namespace maf::sandbox::docker::detail
