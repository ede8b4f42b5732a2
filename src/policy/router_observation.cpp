// The router's half of observation (docs/observability.md): the fan-out built once from
// the constructor's observers, attached to every backend and to every sandbox handed out; the
// AcquisitionEvent of each acquire and the CleanupEvent of each dispose_kind. Apart from
// router.cpp so the policy code stays as it was: with no observers, acquire takes the
// unobserved path and nothing here runs.
#include <chrono>

#include "policy/admission_state.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/router.hpp"

namespace maf::sandbox {

void SandboxRouter::attach_observers(std::vector<std::shared_ptr<SandboxObserver>> observers) {
  auto set = std::make_shared<const ObserverSet>(std::move(observers));
  if (set->empty()) return;
  observers_ = std::move(set);
  for (const auto& b : backends_) b->attach_observers(observers_);
}

boost::asio::awaitable<std::shared_ptr<Sandbox>> SandboxRouter::observed_acquire(SandboxKey key, SandboxSpec spec) {
  AcquisitionEvent event;
  event.context.key = key;
  event.context.call_id = key.call_id;
  event.context.kind = spec.kind();
  event.egress = spec.egress();
  const auto started = std::chrono::steady_clock::now();
  // FIXED: the backend is known before the checks, so a refusal names whom it refused.
  if (fixed_) {
    event.context.backend = fixed_->name();
    event.isolation = fixed_rung_;
  }
  std::shared_ptr<Sandbox> sandbox;
  std::exception_ptr failure;
  try {
    auto backend = select(spec);  // C-69: the same checks as the unobserved path
    calls_->refuse_if_unclean(key);  // docs/tools.md "Unclean keys", as unobserved
    event.context.backend = backend->name();
    event.isolation = try_parse_enum<Isolation>(backend->isolation());
    sandbox = co_await backend->acquire(key, std::move(spec));
  } catch (...) {
    failure = std::current_exception();
  }
  event.duration = std::chrono::steady_clock::now() - started;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const SandboxPolicyRefusal& refusal) {
      event.outcome = AcquisitionOutcome::Refused;
      event.reason = refusal.message();
    } catch (const std::exception& e) {
      event.outcome = AcquisitionOutcome::Failed;
      event.reason = e.what();
    } catch (...) {
      event.outcome = AcquisitionOutcome::Failed;
    }
    event.error_type = error_type_name(failure);
  } else if (sandbox) {
    event.context.instance_id = sandbox->instance_id();
    // The same set attached before means this router handed this sandbox out already.
    event.outcome = sandbox->attach_observers(observers_, key) ? AcquisitionOutcome::Reused
                                                                : AcquisitionOutcome::Started;
  }
  emit(observers_.get(), std::move(event));
  if (failure) std::rethrow_exception(failure);
  co_return sandbox;
}

void SandboxRouter::observe_disposal(const SandboxKey& key, const std::string& kind,
                                     const std::optional<std::string>& instance_id, bool confirmed,
                                     std::chrono::nanoseconds duration) const {
  if (!observers_) return;
  EventContext context;
  context.key = key;
  context.call_id = key.call_id;
  context.kind = kind;
  // Every backend was asked; with one (the usual FIXED router) the event names it.
  for (const auto& b : backends_) context.backend += (context.backend.empty() ? "" : ",") + b->name();
  context.instance_id = instance_id.value_or("");
  emit(observers_.get(), make_cleanup_event(std::move(context), Cleanup::Dispose,
                                            confirmed ? CleanupOutcome::Done : CleanupOutcome::Unconfirmed, {}, duration));
}

void SandboxRouter::observe_queued(const SandboxKey& key, const std::string& kind,
                                   const AdmitOptions& options) const noexcept {
  try {
    ToolCallEvent event;
    event.context.key = key;
    event.context.call_id = options.call_id;
    event.context.kind = kind;
    event.phase = ToolCallPhase::Queued;
    event.tool = options.tool;
    emit(observers_.get(), std::move(event));
  } catch (...) {
    // Only the event's allocation can throw here; observation never fails an admission.
  }
}

}  // namespace maf::sandbox
