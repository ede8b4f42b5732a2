#pragma once
/// @file support/proxy_log.hpp
/// The egress proxy's decisions, read from its log (docs/backends/egress-proxy.md; docs/observability.md
/// OBS-7). One parser for every backend that runs `backends/egress-proxy` beside a sandbox
/// (Docker drains it at teardown, WSLC reads it before disposal removes the proxy), so a
/// decision line means the same thing whichever backend read it. The log is bytes a guest
/// can influence (the hosts it asks for): the parser never throws on them
/// (`fuzz/fuzz_proxy_log.cpp`).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/key.hpp"

namespace maf::sandbox {
class ObserverHub;
}

namespace maf::sandbox::support {

/// One decision line of the proxy: `decision` is ALLOW, DENY, DENY-NONGLOBAL or
/// UNREACHABLE; other lines (readiness, malformed requests, a full proxy) are not decisions
/// about a destination and are left out.
struct ProxyDecision {
  std::string decision;
  std::string host;
  int port = 0;
  /// A request inside a terminated tunnel, or a plain-HTTP one, checked against a method/path
  /// rule (issue 45): its method, canonical path (no query) and the rule; `reason` for a
  /// refusal. Empty for a decision on a host alone. Never a header, a query or a body.
  std::string method{};
  std::string path{};
  std::string rule{};
  std::string reason{};

  friend bool operator==(const ProxyDecision&, const ProxyDecision&) = default;
};

/// At most this many decisions per read; more set `truncated`.
inline constexpr std::size_t kMaxProxyDecisions = 1000;

struct ProxyDecisions {
  std::vector<ProxyDecision> decisions;  ///< in log order
  /// The log held more than was read, or more than kMaxProxyDecisions decisions: earlier
  /// decisions are missing.
  bool truncated = false;
};

/// The decisions in a proxy's log: the JSON lines of this port's proxy
/// (`{"event":"decision","decision":"deny","host":…,"port":…}`) and the text lines of the
/// Python one (`DENY host:port`, `[v6]:port` unbracketed); CR before LF is ignored.
/// `read_cut`: the reader stopped early (a byte bound). `tail_lines`: the reader asked for
/// only the last this many lines (0: the whole log), so a log of that many lines or more may
/// have lost its head. Both set `truncated`, as do decisions beyond kMaxProxyDecisions.
ProxyDecisions parse_proxy_decisions(std::string_view log, bool read_cut, std::size_t tail_lines);

/// The sandbox CA certificate (PEM) a terminating proxy prints in its readiness line
/// (`{"event":"listening",…,"ca_certificate":…}`, issue 45); nullopt when no such line
/// holds one. Every backend that places the CA in its guest reads it here.
std::optional<std::string> ca_certificate_in_readiness(std::string_view log);

/// One NetworkDecisionEvent per decision, in order, to `hub` (which never throws): context
/// backend `backend`, key `key` (and its call id) when the proxy is attributed, `proxy` the
/// proxy's container name, each event carrying `truncated`.
void notify_proxy_decisions(const ObserverHub& hub, std::string_view backend, const std::optional<SandboxKey>& key,
                            const std::string& proxy, const std::vector<ProxyDecision>& decisions, bool truncated);

}  // namespace maf::sandbox::support
