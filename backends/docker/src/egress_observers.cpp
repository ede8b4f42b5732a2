// Egress decisions to the core's observers (egress_observers.hpp).
#include "egress_observers.hpp"

#include "maf/sandbox/docker/backend.hpp"

namespace maf::sandbox::docker::detail {

EgressObserver with_core_observers(EgressObserver host_observer, std::shared_ptr<ObserverHub> hub) {
  return [host_observer = std::move(host_observer), hub = std::move(hub)](const EgressEvent& event) {
    for (const auto& d : event.decisions) {
      NetworkDecisionEvent e;
      if (event.key) e.context.key = *event.key;
      e.context.call_id = e.context.key.call_id;
      e.context.backend = std::string(kBackendName);
      e.decision = d.decision;
      e.host = d.host;
      e.port = d.port;
      e.proxy = event.proxy;
      e.truncated = event.truncated;
      hub->notify(std::move(e));
    }
    if (host_observer) host_observer(event);
  };
}

}  // namespace maf::sandbox::docker::detail
