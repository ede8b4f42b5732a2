// The Sandbox's observer attachment (sandbox.hpp, docs/observability.md OBS-5): which
// observers see this sandbox's NVI operations, and the key their events carry.
#include "maf/sandbox/sandbox.hpp"

namespace maf::sandbox {

bool Sandbox::attach_observers(std::shared_ptr<const ObserverSet> observers, const SandboxKey& key) {
  if (observers && observers->empty()) observers.reset();
  auto next = observers ? std::make_shared<const Observation>(Observation{observers, key}) : nullptr;
  std::lock_guard lock(observation_mutex_);
  const bool again = observation_ && observers && observation_->observers == observers;
  observation_ = std::move(next);
  return again;
}

std::shared_ptr<const ObserverSet> Sandbox::observers() const {
  auto o = observation();
  return o ? o->observers : nullptr;
}

SandboxKey Sandbox::observed_key() const {
  auto o = observation();
  return o ? o->key : SandboxKey{};
}

std::shared_ptr<const Sandbox::Observation> Sandbox::observation() const {
  std::lock_guard lock(observation_mutex_);
  return observation_;
}

void Sandbox::deliver(const Observation& observation, SandboxEvent event) const noexcept {
  EventContext& c = context_of(event);
  // A backend may have attributed its event already (an egress proxy labelled with a key).
  if (c.key == SandboxKey{}) c.key = observation.key;
  if (c.call_id.empty()) c.call_id = c.key.call_id;
  if (c.backend.empty()) c.backend = descriptor_.backend_name;
  if (c.kind.empty()) c.kind = descriptor_.kind;
  if (c.instance_id.empty()) c.instance_id = descriptor_.instance_id;
  emit(observation.observers.get(), std::move(event));
}

void Sandbox::notify(SandboxEvent event) const noexcept {
  if (auto o = observation()) deliver(*o, std::move(event));
}

}  // namespace maf::sandbox
