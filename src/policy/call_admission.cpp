// Call admission per (key, kind), docs/tools.md "Call admission": the state machine (no I/O). See
// src/policy/admission_state.hpp for the locking discipline and docs/tools.md for the behaviour.
#include "policy/admission_state.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sandbox.hpp"

namespace maf::sandbox {

CallTicket::CallTicket(std::shared_ptr<detail::CallAdmission> admission, std::shared_ptr<detail::AdmissionGate> gate,
                       SandboxKey key, std::string kind, bool exclusive)
    : admission_(std::move(admission)),
      gate_(std::move(gate)),
      key_(std::move(key)),
      kind_(std::move(kind)),
      exclusive_(exclusive) {}

CallTicket::CallTicket(CallTicket&& other) noexcept
    : admission_(std::move(other.admission_)),
      gate_(std::move(other.gate_)),
      key_(std::move(other.key_)),
      kind_(std::move(other.kind_)),
      exclusive_(other.exclusive_) {
  other.gate_.reset();
}

CallTicket& CallTicket::operator=(CallTicket&& other) noexcept {
  if (this != &other) {
    if (gate_) admission_->release_abandoned(*this);
    admission_ = std::move(other.admission_);
    gate_ = std::move(other.gate_);
    other.gate_.reset();
    key_ = std::move(other.key_);
    kind_ = std::move(other.kind_);
    exclusive_ = other.exclusive_;
  }
  return *this;
}

CallTicket::~CallTicket() {
  if (gate_) admission_->release_abandoned(*this);
}

namespace detail {

const char* to_string(GateState state) noexcept {
  switch (state) {
    case GateState::Serving: return "serving";
    case GateState::Draining: return "draining";
    case GateState::Cleaning: return "cleaning";
  }
  return "unknown";
}

std::size_t CallAdmission::GateIdHash::operator()(const GateId& id) const noexcept {
  return SandboxKeyHash{}(id.key) * 31 + std::hash<std::string>{}(id.kind);
}

std::shared_ptr<AdmissionGate> CallAdmission::gate_locked(const SandboxKey& key, const std::string& kind) {
  auto& slot = gates_[GateId{key, kind}];
  if (!slot) {
    slot = std::make_shared<AdmissionGate>();
    slot->key = key;
    slot->kind = kind;
  }
  return slot;
}

bool CallAdmission::fits(const AdmissionGate& gate, bool exclusive) noexcept {
  return exclusive ? gate.active == 0 : !gate.exclusive_active;
}

void CallAdmission::enter_locked(AdmissionGate& gate, bool exclusive) noexcept {
  ++gate.active;
  if (exclusive) gate.exclusive_active = true;
}

void CallAdmission::admit_waiters_locked(AdmissionGate& gate) {
  while (gate.state == GateState::Serving && !gate.waiters.empty()) {
    auto& front = gate.waiters.front();
    if (!fits(gate, front->exclusive)) break;
    enter_locked(gate, front->exclusive);
    front->admitted = true;
    front->timer.cancel();  // its completion is posted to the waiter's own executor
    gate.waiters.pop_front();
  }
}

void CallAdmission::forget_if_idle_locked(const std::shared_ptr<AdmissionGate>& gate) {
  if (gate->active != 0 || !gate->waiters.empty() || !gate->owed.empty() || gate->state != GateState::Serving)
    return;
  auto it = gates_.find(GateId{gate->key, gate->kind});
  if (it != gates_.end() && it->second == gate) gates_.erase(it);
}

boost::asio::awaitable<CallTicket> CallAdmission::admit(SandboxKey key, std::string kind, AdmitOptions options,
                                                        std::function<void()> on_wait) {
  if (options.timeout.count() <= 0)
    throw ValueError("admit_call timeout must be positive, got " + std::to_string(options.timeout.count()) + " ms");
  auto executor = co_await boost::asio::this_coro::executor;
  auto self = shared_from_this();
  std::shared_ptr<AdmissionGate> gate;
  std::shared_ptr<AdmissionWaiter> waiter;
  {
    std::lock_guard guard(mutex_);
    gate = gate_locked(key, kind);
    if (gate->state == GateState::Serving && gate->waiters.empty() && fits(*gate, options.exclusive)) {
      enter_locked(*gate, options.exclusive);
    } else {
      waiter = std::make_shared<AdmissionWaiter>(executor, std::chrono::steady_clock::now() + options.timeout,
                                                 options.exclusive);
      gate->waiters.push_back(waiter);
    }
  }
  if (!waiter) co_return CallTicket(self, gate, std::move(key), std::move(kind), options.exclusive);
  if (on_wait) on_wait();  // the router's queued event; it swallows what an observer throws

  // Lives in this frame: if the frame is destroyed while parked (its io_context stopped), a
  // waiter still queued leaves the queue and one already admitted gives its place back.
  struct Parked {
    CallAdmission& admission;
    std::shared_ptr<AdmissionGate> gate;
    std::shared_ptr<AdmissionWaiter> waiter;
    bool settled = false;
    ~Parked() {
      if (settled) return;
      std::lock_guard guard(admission.mutex_);
      if (waiter->admitted) {
        --gate->active;
        if (waiter->exclusive) gate->exclusive_active = false;
      } else {
        auto& q = gate->waiters;
        q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
      }
      admit_waiters_locked(*gate);
      admission.forget_if_idle_locked(gate);
    }
  } parked{*this, gate, waiter};

  boost::system::error_code ignored;  // admission cancels the wait; expiry completes it
  auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ignored);
  auto park = [this, waiter](auto handler) {
    std::lock_guard guard(mutex_);
    if (waiter->admitted) {
      boost::asio::post(waiter->timer.get_executor(),
                        [h = std::move(handler)]() mutable { h(boost::system::error_code{}); });
    } else {
      waiter->timer.async_wait(std::move(handler));
    }
  };
  co_await boost::asio::async_initiate<decltype(token), void(boost::system::error_code)>(park, token);

  std::string state;
  {
    std::lock_guard guard(mutex_);
    if (!waiter->admitted) {
      auto& q = gate->waiters;
      q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
      state = to_string(gate->state);
      if (gate->exclusive_active) state += ", an exclusive call running";
      admit_waiters_locked(*gate);  // an exclusive waiter leaving the front may unblock others
      forget_if_idle_locked(gate);
    }
    parked.settled = true;
  }
  if (!state.empty())
    throw TimeoutError("call admission for key '" + to_string(key) + "' kind '" + kind + "' was not granted within " +
                       std::to_string(options.timeout.count()) + " ms (the pair is " + state + ")");
  co_return CallTicket(self, gate, std::move(key), std::move(kind), options.exclusive);
}

ReleaseOutcome CallAdmission::release_locked(CallTicket& ticket, std::vector<OwedCleanup> owed) {
  auto gate = std::move(ticket.gate_);
  ticket.gate_.reset();
  --gate->active;
  if (ticket.exclusive_) gate->exclusive_active = false;
  for (auto& record : owed) {
    std::pair<std::string, std::string> id{record.sandbox->backend_name(), record.sandbox->instance_id()};
    auto [it, inserted] = gate->owed.try_emplace(id, record);
    if (!inserted) {
      it->second.rung = stronger(it->second.rung, record.rung);
      if (record.on_failure == FailedReclaimPolicy::Refuse) it->second.on_failure = FailedReclaimPolicy::Refuse;
    }
  }
  ReleaseOutcome outcome{gate, {}};
  if (!gate->owed.empty()) {
    if (gate->active == 0) {
      // CLEANING before the releaser's first await: no newcomer can be admitted in between.
      gate->state = GateState::Cleaning;
      for (auto& [id, record] : gate->owed) outcome.to_run.push_back(std::move(record));
      gate->owed.clear();
    } else {
      gate->state = GateState::Draining;
    }
    return outcome;
  }
  admit_waiters_locked(*gate);
  forget_if_idle_locked(gate);
  return outcome;
}

ReleaseOutcome CallAdmission::release(CallTicket& ticket, std::vector<OwedCleanup> owed) {
  if (!ticket.gate_) throw ValueError("release_call: the ticket was already released (or never admitted)");
  std::lock_guard guard(mutex_);
  return release_locked(ticket, std::move(owed));
}

void CallAdmission::finish_cleaning(const std::shared_ptr<AdmissionGate>& gate) {
  std::lock_guard guard(mutex_);
  gate->state = GateState::Serving;
  admit_waiters_locked(*gate);
  forget_if_idle_locked(gate);
}

void CallAdmission::release_abandoned(CallTicket& ticket) noexcept {
  try {
    std::lock_guard guard(mutex_);
    auto outcome = release_locked(ticket, {});
    if (outcome.to_run.empty()) return;
    for (const auto& record : outcome.to_run)
      if (record.on_failure == FailedReclaimPolicy::Refuse)
        mark_unclean_locked({outcome.gate->key, record.sandbox->backend_name(), outcome.gate->kind,
                             record.sandbox->instance_id(),
                             "a call ticket was destroyed unreleased while a " + std::string(to_string(record.rung)) +
                                 " was owed"});
    outcome.gate->state = GateState::Serving;
    admit_waiters_locked(*outcome.gate);
    forget_if_idle_locked(outcome.gate);
  } catch (...) {
    // Only allocation can fail here; a destructor must not throw.
  }
}

void CallAdmission::mark_unclean_locked(UncleanTarget target) {
  for (auto& t : unclean_)
    if (t.key == target.key && t.backend == target.backend && t.kind == target.kind &&
        t.instance_id == target.instance_id) {
      t.reason = std::move(target.reason);
      return;
    }
  unclean_.push_back(std::move(target));
}

void CallAdmission::mark_unclean(UncleanTarget target) {
  std::lock_guard guard(mutex_);
  mark_unclean_locked(std::move(target));
}

void CallAdmission::clear_unclean(const SandboxKey& key, const std::optional<std::string>& kind,
                                  const std::optional<std::string>& instance_id) {
  std::lock_guard guard(mutex_);
  std::erase_if(unclean_, [&](const UncleanTarget& t) {
    return t.key == key && (!kind || t.kind == *kind) && (!instance_id || t.instance_id == *instance_id);
  });
}

void CallAdmission::clear_unclean_scope(const std::string& scope, const std::string& thread_id) {
  std::lock_guard guard(mutex_);
  std::erase_if(unclean_,
                [&](const UncleanTarget& t) { return t.key.scope == scope && t.key.thread_id == thread_id; });
}

std::vector<UncleanTarget> CallAdmission::unclean() const {
  std::lock_guard guard(mutex_);
  return unclean_;
}

void CallAdmission::refuse_if_unclean(const SandboxKey& key) const {
  std::lock_guard guard(mutex_);
  for (const auto& t : unclean_)
    if (t.key == key)
      throw SandboxKeyUnclean("sandbox key '" + to_string(key) + "' is unclean: the cleanup of backend '" + t.backend +
                              "' kind '" + t.kind + "' instance '" + t.instance_id + "' failed (" + t.reason +
                              "); the router refuses the key until a disposal lands (dispose_unclean)");
}

}  // namespace detail
}  // namespace maf::sandbox
