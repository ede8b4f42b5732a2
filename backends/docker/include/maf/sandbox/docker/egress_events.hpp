#pragma once
/// @file docker/egress_events.hpp
/// Egress events (D-27; docs/backends/egress-proxy.md): what an ALLOWLIST sandbox's proxy decided,
/// published when the proxy is torn down.
///
/// Each decision reaches the core's observers as a NetworkDecisionEvent (observer.hpp; the
/// router attaches them to the backend). Besides, `DockerConfig::egress_observer` is a
/// callback set by a host that builds the backend itself; a host that loads the plugin by
/// name (JSON config, which cannot carry a callback) names a file instead:
/// `"egress_event_log"` appends one JSON line per event (egress_event_log(), below).
///
/// When: every proxy teardown — dispose, dispose_scope, reap, and the replacement of a
/// warm sandbox's proxy at re-acquire — stops the proxy, reads the tail of its log
/// (`logs --tail 1000`, at most 1 MiB per stream), removes it, and only after the removal
/// succeeded (or found it already gone) publishes one event, if the log held a decision or
/// was cut. A failed removal publishes nothing. Delivery is synchronous, on the disposing
/// coroutine's thread; keep the callback short. An exception from it is logged and never
/// changes a disposal's result. Not a durable audit trail: a proxy removed by someone
/// else, or a failed drain, loses its decisions.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/key.hpp"
#include "maf/sandbox/support/proxy_log.hpp"

namespace maf::sandbox::docker {

/// One decision line of the proxy (docs/backends/egress-proxy.md "What it does"): `decision` is ALLOW, DENY,
/// DENY-NONGLOBAL or UNREACHABLE. The core's type: the parser is shared with every backend
/// that runs the egress proxy (support/proxy_log.hpp).
using EgressDecision = support::ProxyDecision;

/// At most this many decisions per event; more set `truncated`.
inline constexpr std::size_t kMaxEgressDecisions = support::kMaxProxyDecisions;

struct EgressEvent {
  /// From the proxy's `maf-sandbox.key.v1` label (D-8), or the disposing
  /// caller's key when the label is absent or empty and every selector label matches it;
  /// absent when neither attributes the proxy.
  std::optional<SandboxKey> key;
  std::string proxy;  ///< the proxy's container name
  std::vector<EgressDecision> decisions;  ///< in log order
  /// The log held more than was read (the tail or byte bound was reached), or more than
  /// kMaxEgressDecisions decisions: earlier decisions are missing.
  bool truncated = false;
};

using EgressObserver = std::function<void(const EgressEvent&)>;

/// An observer that appends each event to `path` as one JSON line:
/// `{"proxy": …, "key": {"scope", "thread_id", "agent_id", "call_id"} | null,
///   "decisions": [{"decision", "host", "port"}, …], "truncated": bool}`.
/// The file is opened (created 0600 if absent) now, so a path that cannot be appended to
/// is refused here — `ValueError` naming the path and the reason — not at the first event;
/// each event is then one `write(2)` under O_APPEND, so lines from several backends or
/// processes sharing the file never interleave within a line. A failed write throws, and
/// the drain logs it (it never changes a disposal's result).
EgressObserver egress_event_log(const std::string& path);

}  // namespace maf::sandbox::docker
