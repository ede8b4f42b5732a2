// Egress decisions to the core's observers (egress_observers.hpp).
#include "egress_observers.hpp"

#include "maf/sandbox/docker/backend.hpp"

namespace maf::sandbox::docker::detail {

EgressObserver with_core_observers(EgressObserver host_observer, std::shared_ptr<ObserverHub> hub) {
  return [host_observer = std::move(host_observer), hub = std::move(hub)](const EgressEvent& event) {
    support::notify_proxy_decisions(*hub, kBackendName, event.key, event.proxy, event.decisions, event.truncated);
    if (host_observer) host_observer(event);
  };
}

}  // namespace maf::sandbox::docker::detail
