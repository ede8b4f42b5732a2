#pragma once
/// @file router_options.hpp
/// The host's policy as the router takes it: the isolation floor, selection, denials and the
/// scope floor (C-60, C-62). Apart from router.hpp so the light entry (<maf/sandbox.hpp>)
/// can state a policy without the coroutine API.

#include <optional>
#include <string>

#include "maf/sandbox/attached_identity.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/isolation.hpp"

namespace maf::sandbox {

/// FIXED: one backend (named or first) serves every spec. PER_SPEC: the first backend in
/// registration order whose declarations pass every check serves each spec (C-63).
enum class Selection { Fixed, PerSpec };

/// Tag that makes lowering the isolation floor below the default greppable in review
/// (after Sandbox2's policy builder): `RouterOptions::lowered_floor(Isolation::OsProcess,
/// LowerIsolationFloor{})`.
struct LowerIsolationFloor {
  explicit LowerIsolationFloor() = default;
};

struct RouterOptions {
  /// The host floor; default microvm. A weaker floor is an explicit decision: prefer
  /// `lowered_floor(...)` so it shows in review.
  Isolation min_isolation = kDefaultMinIsolation;
  /// FIXED selection: the backend's name; absent = the first registered.
  std::optional<std::string> selected{};
  CapabilitySet denied_capabilities{};
  IdentitySet denied_identities{};
  Selection selection = Selection::Fixed;
  IsolationScope min_isolation_scope = IsolationScope::Conversation;
  /// The widest attached authority a spec may ask (docs/policy.md CRED-5): `none`, the
  /// default, refuses every spec that names a credential — at ensure_can_serve and again at
  /// acquire — with SandboxIdentityScopeDenied naming the credential and both scopes. The
  /// values come from SandboxRouter::attach_credential_source (CRED-4).
  IdentityScope max_identity_scope = IdentityScope::None;

  /// Options whose floor is lowered on purpose.
  static RouterOptions lowered_floor(Isolation floor, LowerIsolationFloor) {
    RouterOptions options;
    options.min_isolation = floor;
    return options;
  }
};

}  // namespace maf::sandbox
