#pragma once
/// @file conformance/limits.hpp
/// LIMITS (docs/conformance.md "LIMITS", docs/limits.md): the resource bounds a backend
/// declares (BackendDeclarations::resource_bounds) attacked on a real engine. Unlike the
/// other suites it needs sandboxes of its own — each probe acquires one with exactly the
/// bound it attacks — so it runs over a LimitsSubject, not a ConformanceSubject.
///
/// A probe whose bound the backend does not declare is skipped with that reason, never
/// passed; a backend declaring none is refused (SuiteRefused).
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox::conformance {

/// What LIMITS needs of a backend: sandboxes acquired with given bounds, by name (the same
/// name is the same key), and the backend's expiry reap.
class LimitsSubject {
public:
  virtual ~LimitsSubject();
  virtual BlockingRunner& runner() = 0;
  /// The backend's own declared bounds: they decide the skips.
  virtual ResourceBoundSet declared_bounds() const = 0;
  /// A sandbox with exactly `bounds` (EXEC required), for key `name`; every call with one
  /// name and the same bounds is one identity (C-52).
  virtual std::shared_ptr<Sandbox> acquire(const std::string& name, const ResourceLimits& bounds) = 0;
  /// The backend's reap_expired (LIM-7).
  virtual ScopePurge reap_expired() = 0;
  /// Disposes everything acquire made; called once at the end of run_limits. Tries every
  /// sandbox, then throws (any std::exception) naming each one left behind and why.
  virtual void dispose_all() = 0;
  /// Bound of every exec the probes run.
  virtual std::chrono::milliseconds exec_timeout() const { return std::chrono::seconds(120); }
  /// "process backend", for messages.
  virtual std::string describe() const = 0;
};

/// A LimitsSubject over any backend: specs are `base` with the probe's bounds (kind
/// "limits-probe" when `base.kind` is empty, EXEC added), keys in a scope of their own.
class BackendLimitsSubject final : public LimitsSubject {
public:
  BackendLimitsSubject(std::shared_ptr<SandboxBackend> backend, SandboxSpec::Fields base, BlockingRunner& runner);
  BlockingRunner& runner() override { return runner_; }
  ResourceBoundSet declared_bounds() const override { return backend_->declarations().resource_bounds; }
  std::shared_ptr<Sandbox> acquire(const std::string& name, const ResourceLimits& bounds) override;
  ScopePurge reap_expired() override;
  void dispose_all() override;
  std::string describe() const override { return "backend '" + backend_->name() + "'"; }

private:
  std::shared_ptr<SandboxBackend> backend_;
  SandboxSpec::Fields base_;
  BlockingRunner& runner_;
  std::string scope_;
};

/// dispose_all left sandboxes behind. A harness failure, not a verdict: the probes'
/// results are kept here, and what() names every key not disposed (the runner reports it
/// as RunReport::disposal_failure, exit 2, as it does its own subject's).
class LimitsDisposalFailed : public std::runtime_error {
public:
  LimitsDisposalFailed(const std::string& what, std::vector<ProbeResult> results);
  const std::vector<ProbeResult>& results() const noexcept { return results_; }

private:
  std::vector<ProbeResult> results_;
};

/// Runs every LIMITS probe (LM-1…LM-4) in order, then dispose_all. Throws SuiteRefused
/// when the backend declares no bound at all, LimitsDisposalFailed when dispose_all fails.
std::vector<ProbeResult> run_limits(LimitsSubject& subject);
/// run_limits, throwing ConformanceFailure when any probe failed (R6).
std::vector<ProbeResult> check_limits(LimitsSubject& subject);

}  // namespace maf::sandbox::conformance
