// SandboxRouter: the policy of docs/policy.md (C-60…C-77). The checks run as plain comparisons that yield
// a refusal code; a message is built only for the refusal that is thrown, so the check path
// allocates nothing for a spec that passes — PER_SPEC refusals on the way included
// (tests/unit/test_router_allocations.cpp).
#include "maf/sandbox/router.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "policy/admission_state.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "seam/spec_refusal.hpp"

namespace maf::sandbox {
namespace {

std::string registered_names(const std::vector<std::shared_ptr<SandboxBackend>>& backends) {
  std::vector<std::string> names;
  for (const auto& b : backends) names.push_back(b->name());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

Isolation parse_backend_rung(const SandboxBackend& backend) {
  const std::string raw = backend.isolation();
  if (auto rung = try_parse_enum<Isolation>(raw)) return *rung;
  throw SandboxBackendNotPermitted("backend '" + backend.name() + "' declares isolation '" + raw +
                                   "', which is not a rung of the isolation ladder (" + isolation_ladder_text() +
                                   "); refusing it");
}

}  // namespace

SandboxRouter::SandboxRouter(std::vector<std::shared_ptr<SandboxBackend>> backends, RouterOptions options,
                             std::vector<std::shared_ptr<SandboxObserver>> observers)
    : backends_(std::move(backends)),
      options_(std::move(options)),
      calls_(std::make_shared<detail::CallAdmission>()) {
  for (const auto& b : backends_)
    if (!b) throw ValueError("SandboxRouter: a registered backend is null");
  attach_observers(std::move(observers));
  if (backends_.empty()) return;  // C-61: disabled, nothing raises
  if (options_.selection == Selection::PerSpec) {
    // [gap] C-63: refuse unknown rungs of any registered backend at construction.
    rungs_.reserve(backends_.size());
    for (const auto& b : backends_) rungs_.push_back(parse_backend_rung(*b));
    if (options_.selected)
      throw ValueError("SandboxRouter: 'selected' ('" + *options_.selected +
                       "') names a backend, which only FIXED selection uses; PER_SPEC prefers registration order");
    return;
  }
  if (options_.selected) {
    for (const auto& b : backends_)
      if (b->name() == *options_.selected) {
        fixed_ = b;
        break;
      }
    if (!fixed_)
      throw NoSandboxBackend("sandbox backend '" + *options_.selected + "' is not registered (registered: " +
                             registered_names(backends_) + ")");
  } else {
    fixed_ = backends_.front();
  }
  fixed_rung_ = parse_backend_rung(*fixed_);
  if (!meets_floor(fixed_rung_, options_.min_isolation))
    throw SandboxBackendNotPermitted(
        "backend '" + fixed_->name() + "' declares isolation '" + std::string(to_string(fixed_rung_)) +
        "', below the host's minimum-isolation floor '" + std::string(to_string(options_.min_isolation)) +
        "' (ladder, weakest first: " + isolation_ladder_text() +
        "); the host must lower the floor explicitly to use it");
}

void SandboxRouter::ensure_can_serve(const SandboxSpec& spec) const {
  if (backends_.empty()) return;
  (void)select(spec);
}

void SandboxRouter::attach_credential_source(const CredentialSource& source) {
  // CRED-4: the host's value source goes to every backend, as the observers do.
  for (const auto& b : backends_) b->attach_credential_source(source);
}

std::shared_ptr<SandboxBackend> SandboxRouter::select(const SandboxSpec& spec) const {
  if (backends_.empty()) throw NoSandboxBackend("no sandbox backend is configured");
  if (fixed_) {
    if (const auto refusal = first_refusal(*fixed_, fixed_rung_, spec)) refuse(*refusal, *fixed_, fixed_rung_, spec);
    return fixed_;
  }
  // PER_SPEC: the first backend that passes every check; else the first backend's refusal.
  // Refusals along the way are codes, not exceptions: only the one thrown gets a message.
  for (std::size_t i = 0; i < backends_.size(); ++i)
    if (!first_refusal(*backends_[i], rungs_[i], spec)) return backends_[i];
  refuse(*first_refusal(*backends_.front(), rungs_.front(), spec), *backends_.front(), rungs_.front(), spec);
}

std::optional<SandboxRouter::Refusal> SandboxRouter::first_refusal(const SandboxBackend& backend, Isolation rung,
                                                                   const SandboxSpec& spec) const {
  const CapabilitySet requires_caps = spec.requires_capabilities();
  // #1 host-denied capabilities, #2 host-denied identities
  if (!requires_caps.intersection(options_.denied_capabilities).empty()) return Refusal::DeniedCapability;
  if (!spec.identities().intersection(options_.denied_identities).empty()) return Refusal::DeniedIdentity;
  // CRED-5, with the host's other denials: its ceiling on attached authority.
  for (const auto& credential : spec.attached_identity())
    if (credential.scope() > options_.max_identity_scope) return Refusal::IdentityScope;
  // #3 effective floor (C-66)
  if (!meets_floor(rung, stricter(options_.min_isolation, spec.min_isolation()))) return Refusal::BelowFloor;
  // #4…#8, C-68 and LIM-3: what the backend declares (spec_refusal.hpp; ACQ-1 runs the same).
  if (detail::first_unserved(backend.declarations(), spec, options_.min_isolation_scope)) return Refusal::Unserved;
  return std::nullopt;
}

void SandboxRouter::refuse(Refusal refusal, const SandboxBackend& backend, Isolation rung,
                           const SandboxSpec& spec) const {
  const std::string& kind = spec.kind();
  const CapabilitySet requires_caps = spec.requires_capabilities();
  switch (refusal) {
    case Refusal::DeniedCapability:
      throw SandboxCapabilityDenied("workload kind '" + kind + "' requires " +
                                    requires_caps.intersection(options_.denied_capabilities).to_string() +
                                    ", which the host denies (denied_capabilities: " +
                                    options_.denied_capabilities.to_string() + ")");
    case Refusal::DeniedIdentity:
      throw SandboxIdentityDenied("workload kind '" + kind + "' uses identities " +
                                  spec.identities().intersection(options_.denied_identities).to_string() +
                                  ", which the host denies (denied_identities: " +
                                  options_.denied_identities.to_string() + ")");
    case Refusal::BelowFloor: {
      const Isolation floor = stricter(options_.min_isolation, spec.min_isolation());
      throw SandboxBackendNotPermitted("workload kind '" + kind + "' requires at least '" +
                                       std::string(to_string(floor)) + "' isolation, but backend '" + backend.name() +
                                       "' declares '" + std::string(to_string(rung)) +
                                       "' (ladder, weakest first: " + isolation_ladder_text() + ")");
    }
    case Refusal::IdentityScope:
      for (const auto& credential : spec.attached_identity())
        if (credential.scope() > options_.max_identity_scope)
          throw SandboxIdentityScopeDenied(
              "workload kind '" + kind + "' asks credential '" + credential.name() + "' at identity scope '" +
              std::string(to_string(credential.scope())) + "' (lifetime '" +
              std::string(to_string(credential.lifetime())) + "', sharing '" +
              std::string(to_string(credential.sharing())) + "'), wider than the host's max_identity_scope '" +
              std::string(to_string(options_.max_identity_scope)) + "' (backend '" + backend.name() + "')");
      break;
    case Refusal::Unserved:
      detail::refuse_unserved(*detail::first_unserved(backend.declarations(), spec, options_.min_isolation_scope),
                              backend.name(), backend.declarations(), spec, options_.min_isolation_scope);
  }
  // Unreachable while first_refusal and refuse agree; a loud error beats a silent pass.
  throw RuntimeError("SandboxRouter: refusal " + std::to_string(static_cast<int>(refusal)) +
                     " has no message for backend '" + backend.name() + "'");
}

boost::asio::awaitable<std::shared_ptr<Sandbox>> SandboxRouter::acquire(SandboxKey key, SandboxSpec spec) {
  if (observers_) co_return co_await observed_acquire(std::move(key), std::move(spec));
  auto backend = select(spec);  // C-69: same code path as ensure_can_serve
  calls_->refuse_if_unclean(key);  // docs/tools.md "Unclean keys": until a disposal lands
  co_return co_await backend->acquire(std::move(key), std::move(spec));
}

boost::asio::awaitable<CallTicket> SandboxRouter::admit_call(SandboxKey key, std::string kind,
                                                             const AdmitOptions& options) {
  return admit_call_with(std::move(key), std::move(kind), options);  // not a coroutine: copied now
}

boost::asio::awaitable<CallTicket> SandboxRouter::admit_call(SandboxKey key, std::string kind) {
  return admit_call_with(std::move(key), std::move(kind), AdmitOptions{});  // not a coroutine (GCC 12)
}

boost::asio::awaitable<CallTicket> SandboxRouter::admit_call_with(SandboxKey key, std::string kind, AdmitOptions options) {
  // Only the admission knows that a call waits, so the queued event is the router's; the
  // tool layer reports admitted and released (docs/observability.md).
  std::function<void()> on_wait;
  if (observers_ && !options.call_id.empty())
    on_wait = [this, &key, &kind, &options] { observe_queued(key, kind, options); };
  co_return co_await calls_->admit(key, kind, options, std::move(on_wait));
}

std::vector<UncleanTarget> SandboxRouter::unclean() const { return calls_->unclean(); }

void SandboxRouter::mark_unclean(UncleanTarget target) {
  logger()->warn("sandbox key {} marked unclean: backend '{}' kind '{}' instance '{}': {}", to_string(target.key),
                 target.backend, target.kind, target.instance_id, target.reason);
  calls_->mark_unclean(std::move(target));
}

boost::asio::awaitable<std::vector<CleanupFailure>> SandboxRouter::release_call(CallTicket ticket,
                                                                                std::vector<OwedCleanup> owed,
                                                                                std::chrono::milliseconds timeout) {
  if (!ticket.valid()) throw ValueError("release_call: the ticket was already released (or never admitted)");
  const SandboxKey key = ticket.key();
  std::vector<CleanupFailure> failures;
  std::vector<OwedCleanup> deferred;
  for (auto& record : owed) {
    if (!record.sandbox) throw ValueError("release_call: an owed cleanup names no sandbox");
    if (record.rung != Cleanup::Reclaim) {
      deferred.push_back(std::move(record));
      continue;
    }
    // RECLAIM runs at once, inside this call's admission (so an exclusive kind's next call
    // never sees the directory).
    try {
      co_await record.sandbox->reclaim(record.directory, ".", timeout);
      continue;
    } catch (const Cancelled&) {
      throw;  // the caller's deadline, not a cleanup failure (C-106)
    } catch (const std::exception& e) {
      failures.push_back({key, record.sandbox->kind(), record.sandbox->backend_name(), record.sandbox->instance_id(),
                          Cleanup::Reclaim, e.what()});
    }
    if (record.on_failure == FailedReclaimPolicy::Keep) continue;
    // The directory may still be there: the key is unclean, and a disposal (owed now) is
    // what makes it clean again.
    mark_unclean({key, record.sandbox->backend_name(), ticket.kind(), record.sandbox->instance_id(),
                  "reclaim of '" + record.directory + "' failed: " + failures.back().reason});
    record.rung = Cleanup::Dispose;
    deferred.push_back(std::move(record));
  }
  auto outcome = calls_->release(ticket, std::move(deferred));
  if (!outcome.to_run.empty()) {
    // run_owed_cleanup folds every failure into `failures`; the gate serves again either way.
    for (const auto& record : outcome.to_run) co_await run_owed_cleanup(outcome.gate->key, record, timeout, failures);
    calls_->finish_cleaning(outcome.gate);
  }
  co_return failures;
}

boost::asio::awaitable<void> SandboxRouter::run_owed_cleanup(const SandboxKey& key, const OwedCleanup& owed,
                                                             std::chrono::milliseconds timeout,
                                                             std::vector<CleanupFailure>& failures) {
  const Sandbox& sb = *owed.sandbox;
  if (owed.rung == Cleanup::Reset) {
    try {
      co_await owed.sandbox->reset(timeout);
      co_return;
    } catch (const std::exception& e) {
      failures.push_back({key, sb.kind(), sb.backend_name(), sb.instance_id(), Cleanup::Reset, e.what()});
      logger()->warn("reset of {} kind '{}' on '{}' failed, disposing instead: {}", to_string(key), sb.kind(),
                     sb.backend_name(), e.what());
    }
  }
  bool confirmed = false;
  try {
    confirmed = co_await dispose_kind(key, sb.kind(), sb.instance_id(), timeout);
  } catch (const std::exception& e) {
    logger()->warn("dispose of {} kind '{}' failed: {}", to_string(key), sb.kind(), e.what());
  }
  if (confirmed) co_return;
  failures.push_back({key, sb.kind(), sb.backend_name(), sb.instance_id(), Cleanup::Dispose,
                      "the disposal was not confirmed within " + std::to_string(timeout.count()) + " ms"});
  if (owed.on_failure == FailedReclaimPolicy::Refuse)
    mark_unclean({key, sb.backend_name(), sb.kind(), sb.instance_id(), failures.back().reason});
}

boost::asio::awaitable<std::vector<UncleanTarget>> SandboxRouter::dispose_unclean(std::chrono::milliseconds timeout) {
  for (const auto& target : calls_->unclean()) {
    try {
      // Exclusive admission: a call still running in the target finishes first.
      AdmitOptions exclusive{true, timeout};
      CallTicket ticket = co_await calls_->admit(target.key, target.kind, exclusive);
      const bool confirmed = co_await dispose_kind(target.key, target.kind, target.instance_id, timeout);
      if (!confirmed)
        logger()->warn("dispose_unclean: {} kind '{}' instance '{}' still not disposed", to_string(target.key),
                       target.kind, target.instance_id);
      co_await release_call(std::move(ticket));
    } catch (const std::exception& e) {
      logger()->warn("dispose_unclean: {} kind '{}': {}", to_string(target.key), target.kind, e.what());
    }
  }
  co_return calls_->unclean();
}

boost::asio::awaitable<void> SandboxRouter::dispose(SandboxKey key) {
  bool landed = true;
  for (const auto& b : backends_) {
    try {
      if (auto failure = co_await b->dispose(key, std::nullopt, std::nullopt)) {
        landed = false;
        logger()->warn("dispose of {} on backend '{}' incomplete: {}", to_string(key), b->name(), failure->to_string());
      }
    } catch (const std::exception& e) {
      landed = false;
      logger()->warn("dispose of {} on backend '{}' failed: {}", to_string(key), b->name(), e.what());
    }
  }
  if (landed) calls_->clear_unclean(key, std::nullopt, std::nullopt);  // "Unclean keys": a disposal landed
}

boost::asio::awaitable<bool> SandboxRouter::dispose_kind(SandboxKey key, std::string kind,
                                                         std::optional<std::string> instance_id,
                                                         std::chrono::milliseconds timeout) {
  auto executor = co_await boost::asio::this_coro::executor;
  const auto started = std::chrono::steady_clock::now();
  bool confirmed = true;
  for (const auto& b : backends_) {
    // Each backend is bounded by `timeout`; a late answer counts as unconfirmed (the
    // disposal keeps running detached, holding the backend alive).
    struct State {
      boost::asio::steady_timer timer;
      bool done = false;
      bool ok = false;
    };
    auto state = std::make_shared<State>(State{boost::asio::steady_timer(executor, timeout)});
    boost::asio::co_spawn(
        executor,
        [b, key, kind, instance_id]() -> boost::asio::awaitable<bool> {
          auto failure = co_await b->dispose(key, kind, instance_id);
          if (failure) logger()->warn("dispose of {} kind '{}' on '{}': {}", to_string(key), kind, b->name(), failure->to_string());
          co_return !failure;
        },
        [state, name = b->name()](std::exception_ptr e, bool ok) {
          state->done = true;
          state->ok = ok && !e;
          if (e) {
            try {
              std::rethrow_exception(e);
            } catch (const std::exception& ex) {
              logger()->warn("dispose on backend '{}' failed: {}", name, ex.what());
            }
          }
          state->timer.cancel();
        });
    boost::system::error_code ec;
    co_await state->timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (!state->done) {
      logger()->warn("dispose of {} kind '{}' on backend '{}' did not answer within {} ms", to_string(key), kind,
                     b->name(), timeout.count());
      confirmed = false;
    } else if (!state->ok) {
      confirmed = false;
    }
  }
  if (confirmed) calls_->clear_unclean(key, kind, instance_id);  // "Unclean keys": a disposal landed
  observe_disposal(key, kind, instance_id, confirmed, std::chrono::steady_clock::now() - started);
  co_return confirmed;
}

boost::asio::awaitable<ScopePurge> SandboxRouter::dispose_scope(std::string scope, std::string thread_id) {
  ScopePurge total;
  std::vector<DisposalFailure> failures;
  for (const auto& b : backends_) {
    try {
      ScopePurge p = co_await b->dispose_scope(scope, thread_id);
      total.disposed += p.disposed;
      if (p.undisposed) failures.push_back(*p.undisposed);
    } catch (const std::exception& e) {
      // [gap] C-73: a backend that raises counts as code unknown.
      logger()->warn("dispose_scope({}, {}) on backend '{}' failed: {}", scope, thread_id, b->name(), e.what());
      failures.push_back(DisposalFailure{kDisposalUnknown, b->name() + ": " + e.what()});
    }
  }
  total.undisposed = fold(failures);
  if (!total.undisposed) calls_->clear_unclean_scope(scope, thread_id);  // "Unclean keys": a disposal landed
  co_return total;
}

boost::asio::awaitable<ScopePurge> SandboxRouter::with_scope(std::string scope, std::string thread_id,
                                                             std::function<boost::asio::awaitable<void>()> body) {
  std::exception_ptr body_error;
  try {
    co_await body();
  } catch (...) {
    body_error = std::current_exception();
  }
  ScopePurge purge = co_await dispose_scope(scope, thread_id);
  if (body_error) std::rethrow_exception(body_error);
  co_return purge;
}

boost::asio::awaitable<ScopePurge> SandboxPurger::purge_scoped_thread(std::string scope, std::string thread_id) {
  ScopePurge purge = co_await router_.dispose_scope(scope, thread_id);
  if (purge.disposed > 0)
    logger()->info("purged {} sandbox(es) of scope '{}' thread '{}'", purge.disposed, scope, thread_id);
  co_return purge;
}

}  // namespace maf::sandbox
