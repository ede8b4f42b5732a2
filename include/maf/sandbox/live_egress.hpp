#pragma once
/// @file live_egress.hpp
/// Changing a live sandbox's egress (docs/policy.md "Live egress", EGU-7…EGU-10): the host
/// calls `update_egress` with the whole new `egress_allow`; the router checks the spec it
/// makes exactly as it checks a new spec at acquire (floor, egress mode, the host's
/// denials, identity scope), and only then does the sandbox's backend apply it. Narrowing
/// takes effect for the next request and closes open tunnels to hosts no longer allowed;
/// the change is a NetworkDecisionEvent with decision `POLICY-UPDATED`.
///
/// A sandbox offers it by implementing LiveEgress (the Docker backend's, behind a proxy image
/// whose features label lists `live-policy`); `live_egress_refusal` is its declaration. Any
/// other sandbox is refused with SandboxCapabilityNotSupported, before anything changes.
/// Kept apart from the light entry (sandbox.hpp), as credential_source.hpp is.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

class Sandbox;
class SandboxRouter;

/// What one applied update did, as the enforcing proxy reported it.
struct EgressUpdateReport {
  std::string allowing;            ///< the hosts allowed whole now, as the proxy writes them
  std::size_t closed_tunnels = 0;  ///< open tunnels closed because their host was dropped
};

/// The side of a sandbox whose egress can change while it runs (EGU-7). A backend's sandbox
/// implements it next to Sandbox; the host never calls it directly, only through
/// update_egress, which checks policy first.
class LiveEgress {
public:
  virtual ~LiveEgress() = default;
  /// Why this sandbox cannot change its egress now (the declaration, EGU-8); nullopt when it can.
  virtual std::optional<std::string> live_egress_refusal() const = 0;
  /// Applies `spec`'s egress_allow (already checked by the router) and reports what it did.
  /// Throws OSError/RuntimeError naming the proxy's answer when the enforcing side refuses.
  virtual boost::asio::awaitable<EgressUpdateReport> apply_egress(SandboxSpec spec) = 0;

protected:
  LiveEgress() = default;
  LiveEgress(const LiveEgress&) = default;
  LiveEgress& operator=(const LiveEgress&) = default;
};

/// Why `sandbox` cannot change its egress live (nullopt when it can): not a LiveEgress, or
/// its own refusal.
std::optional<std::string> live_egress_refusal(const Sandbox& sandbox);

/// The result of a checked update: the spec now in force (pass it to the next update) and
/// what the proxy did.
struct EgressUpdateResult {
  SandboxSpec spec;
  EgressUpdateReport report;
};

/// EGU-7…EGU-10: `current` is the spec `sandbox` was acquired with (or the last result's);
/// `allow` the whole new egress_allow. Throws, before anything changes:
/// SandboxCapabilityNotSupported when the sandbox cannot change egress live (naming why);
/// ValueError when `current` is not an ALLOWLIST spec, when the update changes a method/path
/// rule (rules are fixed for the proxy's life) or when the new list is not a valid spec
/// (naming the entry); the router's own refusal (ensure_can_serve) when the new spec is one
/// it would not serve. The backend emits NetworkDecisionEvent `POLICY-UPDATED` to its
/// observers (the router's among them) once the proxy applied it.
boost::asio::awaitable<EgressUpdateResult> update_egress(SandboxRouter& router, std::shared_ptr<Sandbox> sandbox,
                                                         SandboxSpec current, std::vector<EgressEntry> allow);

}  // namespace maf::sandbox
