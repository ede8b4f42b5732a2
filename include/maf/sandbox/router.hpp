#pragma once
/// @file router.hpp
/// SandboxRouter (docs/policy.md; C-60…C-77): the policy seam. It decides — once, before any backend is
/// touched — whether a backend may serve a workload, and refuses loudly otherwise.
///
/// The checks of `ensure_can_serve` run in exactly the order of C-65, then the later checks
/// of C-68 (isolation scope, then method-rule fit). `acquire` runs the same code path, so
/// skipping `ensure_can_serve` never skips a check (C-69). Nothing falls back to another
/// backend, ever (C-62, C-64).
///
/// Policy methods are pure over immutable configuration and may be called concurrently from
/// any thread (C-77).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/call_admission.hpp"
#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/named_argument.hpp"
#include "maf/sandbox/router_options.hpp"

namespace maf::sandbox {

class SandboxRouter {
public:
  /// Construction-time checks (C-60…C-63): under FIXED, the selected name must be registered
  /// (NoSandboxBackend) and its rung must parse and meet the floor
  /// (SandboxBackendNotPermitted); under PER_SPEC, every backend's rung must parse. No
  /// backends = a disabled router (C-61).
  ///
  /// `observers` see what the router and the sandboxes it hands out do
  /// (docs/observability.md): acquisitions, exec, transfers, cleanup and the backends'
  /// network decisions, in this order, synchronously; one that throws is logged and skipped.
  /// A constructor argument rather than a RouterOptions field so the light entry's
  /// RouterOptions stays free of <memory>.
  explicit SandboxRouter(std::vector<std::shared_ptr<SandboxBackend>> backends, RouterOptions options = {},
                         std::vector<std::shared_ptr<SandboxObserver>> observers = {});

  /// A backend exists (C-76). A host attaches no tools when false.
  bool enabled() const noexcept { return !backends_.empty(); }
  /// The FIXED selection, or null (PER_SPEC, or disabled).
  std::shared_ptr<SandboxBackend> backend() const noexcept { return fixed_; }
  const RouterOptions& options() const noexcept { return options_; }
  const std::vector<std::shared_ptr<SandboxBackend>>& backends() const noexcept { return backends_; }
  /// The fan-out over the constructor's observers, shared with every sandbox this router hands out
  /// and attached to every backend; null when there are none. The tool layer emits its
  /// tool-call and cleanup events here (emit(router.observers().get(), …)).
  const std::shared_ptr<const ObserverSet>& observers() const noexcept { return observers_; }

  /// The host's source of credential values (credential_source.hpp, docs/policy.md CRED-4),
  /// handed to every registered backend; call it before the first acquire. Without one a
  /// backend refuses a spec that names a credential (what max_identity_scope permits is
  /// still decided here first).
  void attach_credential_source(const CredentialSource& source);

  /// Every check of C-65/C-68 in order; the first failure throws its typed error. Returns
  /// silently when disabled. Never logs.
  void ensure_can_serve(const SandboxSpec& spec) const;
  /// The backend that would serve `spec` (running the checks); throws like ensure_can_serve
  /// and NoSandboxBackend when disabled.
  std::shared_ptr<SandboxBackend> select(const SandboxSpec& spec) const;

  /// C-69: refuse with NoSandboxBackend when disabled; run the checks; refuse an unclean key
  /// with SandboxKeyUnclean naming key and target (docs/tools.md "Unclean keys"); then the backend's acquire.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> acquire(SandboxKey key, SandboxSpec spec);

  // --- call admission and unclean keys (docs/tools.md "Call admission", "Unclean keys") ---

  /// Admit one call for (key, kind); waits while the pair drains or cleans, or while an
  /// exclusive call runs; TimeoutError after `options.timeout`. Safe from any thread; the
  /// waiter resumes on its own executor.
  /// `options` is copied before this returns; a braced temporary is refused at compile time
  /// (AGENT-1: name it first, or use the overload without options).
  boost::asio::awaitable<CallTicket> admit_call(SandboxKey key, std::string kind, const AdmitOptions& options);
  /// admit_call with the default AdmitOptions.
  boost::asio::awaitable<CallTicket> admit_call(SandboxKey key, std::string kind);
  /// Refused at compile time: GCC 12 destroys a braced AdmitOptions temporary in a co_await
  /// expression twice (docs/tools.md "GCC 12 and temporaries").
  template <class Refused = AdmitOptions>
  boost::asio::awaitable<CallTicket> admit_call(SandboxKey, std::string, AdmitOptions&&) {
    static_assert(detail::kNamedArgumentRequired<Refused>,
                  "name the options first: `const AdmitOptions options{...}; co_await router.admit_call(key, kind, "
                  "options);` — GCC 12 destroys a braced temporary in a co_await expression twice");
    return {};
  }
  /// Give a ticket back with what the call owes. RECLAIM rungs run now; RESET and DISPOSE are
  /// owed to the pair and run by the last call out (this one, or a later release). A failed
  /// rung is reported here and, unless its policy is Keep, marks the key unclean (a failed
  /// RECLAIM or RESET is escalated to a disposal). Never throws for a cleanup failure.
  boost::asio::awaitable<std::vector<CleanupFailure>> release_call(
      CallTicket ticket, std::vector<OwedCleanup> owed = {},
      std::chrono::milliseconds timeout = kDefaultCleanupTimeout);
  /// The targets whose cleanup failed and that no disposal has covered since.
  std::vector<UncleanTarget> unclean() const;
  /// Record a failed cleanup a host ran itself: the key is refused until a disposal lands.
  void mark_unclean(UncleanTarget target);
  /// Retry the disposal of every recorded target (each admitted exclusively, so running calls
  /// finish first); returns what is still unclean.
  boost::asio::awaitable<std::vector<UncleanTarget>> dispose_unclean(
      std::chrono::milliseconds timeout = std::chrono::seconds(30));

  /// Ask every backend; log failures; never throw (C-71).
  boost::asio::awaitable<void> dispose(SandboxKey key);
  /// Narrowed to one kind (and optionally one instance); true = confirmed (C-72). A backend
  /// that does not answer within `timeout` counts as unconfirmed.
  boost::asio::awaitable<bool> dispose_kind(SandboxKey key, std::string kind,
                                            std::optional<std::string> instance_id = std::nullopt,
                                            std::chrono::milliseconds timeout = std::chrono::seconds(30));
  /// Sum over every backend; failures folded; a throwing backend counts as code unknown
  /// (C-73). Never throws.
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id);

  /// Scope guard (C-74): awaits `body`, then dispose_scope however it ended, then rethrows
  /// the body's exception unchanged. Returns the purge. `body` sees a zero purge.
  boost::asio::awaitable<ScopePurge> with_scope(std::string scope, std::string thread_id,
                                                std::function<boost::asio::awaitable<void>()> body);

private:
  // The coroutine behind admit_call: it owns its copy of the options.
  boost::asio::awaitable<CallTicket> admit_call_with(SandboxKey key, std::string kind, AdmitOptions options);
  /// Which check of C-65/C-68 refused; the message is built only when it will be thrown.
  /// `Unserved`: one of the backend's declarations (src/seam/spec_refusal.hpp, shared with ACQ-1).
  enum class Refusal { DeniedCapability, DeniedIdentity, BelowFloor, Unserved, IdentityScope };
  /// The first check `backend` fails for `spec`, or none. Allocates nothing.
  std::optional<Refusal> first_refusal(const SandboxBackend& backend, Isolation rung,
                                       const SandboxSpec& spec) const;
  /// acquire with an AcquisitionEvent, and the router's observers attached to the sandbox
  /// (src/policy/router_observation.cpp).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> observed_acquire(SandboxKey key, SandboxSpec spec);
  /// Builds observers_ and attaches it to every backend.
  void attach_observers(std::vector<std::shared_ptr<SandboxObserver>> observers);
  /// The ToolCallEvent `queued` of an admission that has to wait (options.call_id set).
  void observe_queued(const SandboxKey& key, const std::string& kind, const AdmitOptions& options) const noexcept;
  /// The CleanupEvent (rung dispose) of one dispose_kind.
  void observe_disposal(const SandboxKey& key, const std::string& kind, const std::optional<std::string>& instance_id,
                        bool confirmed, std::chrono::nanoseconds duration) const;
  [[noreturn]] void refuse(Refusal refusal, const SandboxBackend& backend, Isolation rung,
                           const SandboxSpec& spec) const;

  /// Runs one owed RESET/DISPOSE record; folds its failure into `failures`.
  boost::asio::awaitable<void> run_owed_cleanup(const SandboxKey& key, const OwedCleanup& owed,
                                                std::chrono::milliseconds timeout,
                                                std::vector<CleanupFailure>& failures);

  std::vector<std::shared_ptr<SandboxBackend>> backends_;
  RouterOptions options_;
  /// Admission gates and unclean keys, shared by copies of this router (one per router:
  /// docs/tools.md "Call admission").
  std::shared_ptr<detail::CallAdmission> calls_;
  std::shared_ptr<SandboxBackend> fixed_;
  /// Parsed once at construction (a backend's rung is a constant of the instance, C-51), so
  /// the check path neither calls isolation() — a std::string by value — nor re-parses it.
  /// FIXED: the selection's rung only; PER_SPEC: one per backend, in registration order.
  Isolation fixed_rung_ = Isolation::None;
  std::vector<Isolation> rungs_;
  std::shared_ptr<const ObserverSet> observers_;
};

/// C-75: delegates to dispose_scope and logs at info when something was disposed.
class SandboxPurger {
public:
  explicit SandboxPurger(SandboxRouter& router) : router_(router) {}
  boost::asio::awaitable<ScopePurge> purge_scoped_thread(std::string scope, std::string thread_id);

private:
  SandboxRouter& router_;
};

}  // namespace maf::sandbox
