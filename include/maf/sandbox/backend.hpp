#pragma once
/// @file backend.hpp
/// The SandboxBackend interface (C-51…C-59): a provider that draws an isolation boundary
/// and says, honestly, what it provides.
///
/// A backend never re-decides policy. `acquire` is non-virtual (the spdlog `base_sink` shape,
/// as `Sandbox`'s file operations are): it holds the spec to the backend's declarations
/// (ACQ-1), settles the storage base (ACQ-2), serialises acquires of one identity (ACQ-3),
/// calls the backend's `do_acquire` for the engine work alone, and then walks the storage
/// base through the sandbox's own no-follow stat, asking the sandbox to make what is missing
/// (ACQ-4) — docs/writing-a-backend.md "How an acquire runs". A backend may still refuse on
/// what only the engine or the guest can tell (C-54: a missing `sh`, a different OS on cold
/// create; an allowlist with no proxy image configured).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/credential_source.hpp"
#include "maf/sandbox/declarations.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

/// What the core settled before it calls `do_acquire` (docs/writing-a-backend.md ACQ-2, ACQ-4).
struct AcquirePlan {
  /// `spec.work_dir()` or kDefaultWorkDir: absolute, normalised, POSIX (ValueError otherwise,
  /// before any backend code runs). What the sandbox's relative paths resolve under.
  std::string storage_base;
  /// The spec needs the base to exist (it asks exec or a file capability): after do_acquire
  /// the core walks it and calls the sandbox's do_prepare_storage_base.
  bool uses_storage_base = false;
};

class SandboxBackend {
public:
  SandboxBackend();
  virtual ~SandboxBackend();
  SandboxBackend(const SandboxBackend&) = delete;
  SandboxBackend& operator=(const SandboxBackend&) = delete;

  /// Short name used in configuration and messages.
  virtual std::string name() const = 0;
  /// The isolation rung's canonical value, a constant of the instance (C-51). A string so a
  /// mis-configured plugin is refused by the router with its raw value (C-62).
  virtual std::string isolation() const = 0;
  /// What the backend claims; silence per axis as documented in declarations.hpp.
  virtual const BackendDeclarations& declarations() const { return kDefaultBackendDeclarations; }

  /// Get-or-create keyed by (key incl. call_id, spec.kind) (C-52); concurrent acquires of one
  /// identity yield one sandbox. Ensures the storage base exists (C-53). Refuses, before any
  /// backend code runs, a spec the declarations do not serve, with the router's own error
  /// (ACQ-1), and a work_dir that is not an absolute POSIX path (ValueError naming it, ACQ-2).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> acquire(SandboxKey key, SandboxSpec spec);

  /// A new sandbox for `key` and `spec.kind()` whose guest starts as snapshot `snapshot_id`
  /// of `source` left it (SNAPSHOT; docs/snapshots.md SNAP-8). It is a sandbox like any
  /// other — its own key, the new spec's policy, counted, disposed, purged and reaped — and
  /// diverges from `source` from the first write. Runs ACQ-1…ACQ-4 as acquire does; `source`
  /// must be this backend's; a key that already has a sandbox of that kind is refused
  /// (ValueError: a fork never replaces one). Default do_fork: NotImplementedError.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> fork(std::shared_ptr<Sandbox> source, std::string snapshot_id,
                                                        SandboxKey key, SandboxSpec spec);

  /// Dispose the key's sandboxes — every kind, or one kind, or one physical instance (C-56,
  /// C-72). Never throws; absent = disposed or unverifiable.
  virtual boost::asio::awaitable<std::optional<DisposalFailure>> dispose(
      SandboxKey key, std::optional<std::string> kind, std::optional<std::string> instance_id) = 0;

  /// Dispose every sandbox of a conversation, found from the provider (labels, listing) —
  /// not process memory — so another replica can purge it (C-57). Never throws.
  virtual boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) = 0;

  /// Whether reap() is offered.
  virtual bool supports_reap() const noexcept { return false; }
  /// Dispose this backend's sandboxes older than `older_than` (optionally one scope), found
  /// from the provider. Default throws NotImplementedError.
  virtual boost::asio::awaitable<ScopePurge> reap(std::chrono::seconds older_than,
                                                  std::optional<std::string> scope);
  /// Whether reap_expired() is offered.
  virtual bool supports_reap_expired() const noexcept { return false; }
  /// Dispose this backend's sandboxes past their TTL or idle timeout (optionally one scope),
  /// found from the provider (docs/limits.md LIM-7: `maf-sandbox reap --expired`). Default
  /// throws NotImplementedError.
  virtual boost::asio::awaitable<ScopePurge> reap_expired(std::optional<std::string> scope);

  /// How this instance is set up, as (name, value) pairs a host or `maf-sandbox plugins` may
  /// show — e.g. the transport the Docker backend bound and why. Not policy: the router
  /// never reads them. Default: none.
  virtual std::vector<std::pair<std::string, std::string>> facts() const { return {}; }

  /// Observers for what the backend sees outside any one sandbox operation — e.g. an egress
  /// proxy's decisions drained at teardown (docs/observability.md). The router attaches its
  /// own at construction; held weakly. Override only to forward (a wrapper backend).
  virtual void attach_observers(const std::shared_ptr<const ObserverSet>& observers) { hub_->attach(observers); }

  /// The host's credential source (credential_source.hpp, CRED-4), attached through
  /// SandboxRouter::attach_credential_source. Override only to forward (a wrapper backend).
  virtual void attach_credential_source(CredentialSource source) { credentials_ = std::move(source); }

protected:
  /// The engine work of an acquire: find, adopt or create the sandbox `key` and `spec.kind()`
  /// name, and return it with `plan.storage_base` as its storage base. Runs with no other
  /// acquire of the same (key, kind) in this process (ACQ-3): a backend needs no lock of its
  /// own for C-52 here, only for what other processes may do (adoption). Need not make the
  /// storage base: the core walks it afterwards and calls the sandbox's
  /// do_prepare_storage_base for what is missing (ACQ-4).
  virtual boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                                      AcquirePlan plan) = 0;
  /// The engine work of fork: make the new sandbox from `source`'s snapshot. Runs under the
  /// same per-(key, kind) lock as do_acquire; the core walks the storage base afterwards.
  virtual boost::asio::awaitable<std::shared_ptr<Sandbox>> do_fork(std::shared_ptr<Sandbox> source,
                                                                   std::string snapshot_id, SandboxKey key,
                                                                   SandboxSpec spec, AcquirePlan plan);
  /// True only for a wrapper whose do_acquire calls another backend's `acquire`, which runs
  /// ACQ-1…ACQ-4 itself: `acquire` then forwards straight to do_acquire (ACQ-5), so nothing is
  /// checked, locked or walked twice.
  virtual bool forwards_acquire() const noexcept { return false; }

  /// Where a backend delivers those events: `observer_hub()->notify(event)`. Shared, so a
  /// callback that outlives a call (a drain's publisher) can hold it.
  const std::shared_ptr<ObserverHub>& observer_hub() const noexcept { return hub_; }

  /// The value of each of `spec`'s credentials, asked of the attached source (CRED-4), in
  /// the spec's order. Throws SandboxCapabilityNotSupported when no source is attached (the
  /// backend never falls back to anything), SandboxCredentialUnavailable when the source
  /// throws or answers empty — neither message ever holds a value.
  std::vector<SecretValue> supply_credentials(const SandboxKey& key, const SandboxSpec& spec) const;

private:
  struct AcquireLocks;  // ACQ-3's per-(key, kind) locks (src/seam/backend.cpp)
  boost::asio::awaitable<void> walk_storage_base(Sandbox& sandbox, const std::string& kind);
  /// ACQ-1…ACQ-4 around `engine` (do_acquire, or do_fork for SNAP-8): one code path for both.
  using AcquireEngine =
      std::function<boost::asio::awaitable<std::shared_ptr<Sandbox>>(SandboxKey, SandboxSpec, AcquirePlan)>;
  boost::asio::awaitable<std::shared_ptr<Sandbox>> acquire_checked(SandboxKey key, SandboxSpec spec, AcquireEngine engine);

  std::shared_ptr<ObserverHub> hub_ = std::make_shared<ObserverHub>();
  std::shared_ptr<AcquireLocks> acquire_locks_;
  CredentialSource credentials_;
};

/// LIM-3, written once: throws SandboxResourceBoundNotEnforced naming the first bound `spec`
/// asks that `declarations` does not enforce (nothing when all are). `why`, when given, is the
/// backend's reason, appended to the message. The router calls it when it selects a backend;
/// a backend calls it in its acquire too where a direct caller must never be served a bound
/// it does not keep (refuse, never degrade).
void refuse_unenforced_bounds(const std::string& backend_name, const BackendDeclarations& declarations,
                              const SandboxSpec& spec, const std::string& why = {});

}  // namespace maf::sandbox
