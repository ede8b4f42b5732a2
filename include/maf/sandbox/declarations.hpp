#pragma once
/// @file declarations.hpp
/// What a backend honestly claims (C-24; docs/policy.md "Silence, per axis"). Plain data, settled before any sandbox
/// exists (C-24).
///
/// Each field's default is the meaning of silence on that axis:
///  - capabilities: {EXEC, FILES_IN} — read charitably (a functionality claim);
///  - limits: the default caps — read conservatively (a safety claim);
///  - egress_modes: empty — enforces nothing, so even CLOSED is refused;
///  - os_families: empty — no answer, refuses only a spec that asks;
///  - isolation_scopes: empty — read as {CONVERSATION};
///  - resource_bounds: empty — enforces no resource bound, so a spec that asks one is
///    refused (docs/limits.md LIM-3);
///  - snapshot_fidelity: absent — keeps no snapshot, so a spec asking a fidelity is refused
///    (docs/snapshots.md SNAP-2).

#include <optional>
#include <set>
#include <string>

#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/limits.hpp"
#include "maf/sandbox/os_family.hpp"
#include "maf/sandbox/resource_limits.hpp"
#include "maf/sandbox/snapshot.hpp"

namespace maf::sandbox {

struct BackendDeclarations {
  CapabilitySet capabilities = kDefaultCapabilities;
  SandboxLimits limits = kDefaultSandboxLimits;
  EgressSet egress_modes{};
  OsFamilySet os_families{};
  IsolationScopeSet isolation_scopes{};
  /// Method tokens the backend can hold for EGRESS_METHODS rules; absent = every valid token.
  std::optional<std::set<std::string>> egress_method_tokens{};
  /// The resource bounds the backend enforces on every sandbox it serves (docs/limits.md
  /// LIM-3): declare only what a probe of the conformance LIMITS suite proves.
  ResourceBoundSet resource_bounds{};
  /// With ATTACHED_IDENTITY: whether a credential of lifetime `call` is served — its value
  /// asked again and swapped in the running proxy at each call (docs/policy.md CRED-3).
  /// Silence: only lifetime `sandbox`.
  bool per_call_credentials = false;
  /// The rung its snapshots keep (docs/snapshots.md SNAP-1); absent — silence — keeps none,
  /// so a spec asking any fidelity is refused. Declare only what the SNAPSHOT suite proves.
  std::optional<SnapshotFidelity> snapshot_fidelity{};

  /// isolation_scopes with silence read as {CONVERSATION}.
  IsolationScopeSet effective_isolation_scopes() const noexcept {
    return isolation_scopes.empty() ? IsolationScopeSet{IsolationScope::Conversation} : isolation_scopes;
  }
};

/// Every field at its default (C-24): a backend that declares nothing reads as this.
inline const BackendDeclarations kDefaultBackendDeclarations{};

}  // namespace maf::sandbox
