// EGRESS_CLOSED (this port's own): a sandbox acquired with closed egress reaches nothing on
// the host — not its loopback, not any of its addresses — and gets no DNS answer.
//
// Every probe measures twice: the guest's own report (connected / answered) and the host's
// instrument (a connection in the listener's backlog, a datagram at the responder). Either
// one failing fails the probe, so a guest tool that lies or a reply path that is blocked
// cannot make an open network look closed.
//
// The DNS probe asks a responder the runner starts on the host (on every host address, an
// ephemeral port), which answers every query: when the guest has any network path to the
// host, resolution *works* and the probe fails; only a severed network passes. Asking the
// guest's configured resolver instead (getent, a made-up name) would pass on an open
// network whenever the host itself has no working DNS, so it would prove nothing.
#include <sys/socket.h>

#include <array>

#include "host_network.hpp"
#include "maf/sandbox/conformance/subject.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kExec{Capability::Exec};
constexpr auto kAttemptTimeout = std::chrono::seconds(10);
constexpr const char* kCanaryName = "maf-sandbox-conformance-canary.example";

std::vector<HostAddress> addresses(bool loopback) {
  std::vector<HostAddress> out;
  for (auto& a : host_addresses())
    if (a.loopback == loopback) out.push_back(a);
  return out;
}

std::string no_tool(const GuestAttempt& a) {
  return "the guest has no tool to attempt it (bash, busybox nc, python3): nothing was attempted, so nothing is "
         "proven" + (a.detail.empty() ? std::string() : " (" + a.detail + ")");
}

void connect_probe(ProbeContext& c, bool loopback) {
  auto targets = addresses(loopback);
  if (targets.empty()) {
    if (loopback) fail("the host reports no loopback address (getifaddrs); nothing to attack");
    throw ProbeNotApplicable("the host has no non-loopback address (getifaddrs) to attack");
  }
  TcpCanary canary;
  std::string problems;
  std::size_t attempted = 0;
  for (const auto& a : targets) {
    const auto port = canary.port(a.family);
    if (port == 0) continue;  // the host cannot listen on this family: nothing to reach
    ++attempted;
    const auto attempt = c.subject.connect_tcp(a.text, port, kAttemptTimeout);
    if (attempt.tool.empty()) fail(no_tool(attempt));
    if (attempt.reached)
      problems += "the guest (" + attempt.tool + ") connected to " + a.text + ":" + std::to_string(port) + "; ";
    for (const auto& arrived : canary.drain())
      problems += "the host listener received a connection at " + arrived + " while the guest tried " + a.text + "; ";
  }
  if (attempted == 0) fail("no host address could be listened on; nothing was attacked");
  if (!problems.empty()) fail(problems);
}

void loopback_unreachable(ProbeContext& c) { connect_probe(c, true); }
void host_addresses_unreachable(ProbeContext& c) { connect_probe(c, false); }

void name_does_not_resolve(ProbeContext& c) {
  DnsCanary canary;
  const auto query = DnsCanary::query_for(kCanaryName);
  std::string problems;
  std::size_t attempted = 0;
  for (const auto& a : host_addresses()) {
    const auto port = canary.port(a.family);
    if (port == 0) continue;
    ++attempted;
    const auto attempt = c.subject.query_dns(a.text, port, query, std::chrono::seconds(3));
    if (attempt.tool.empty()) fail(no_tool(attempt));
    if (attempt.reached)
      problems += "the guest (" + attempt.tool + ") got a DNS answer from " + a.text + ":" + std::to_string(port) + "; ";
  }
  if (attempted == 0) fail("no host address could be listened on; nothing was attacked");
  for (const auto& from : canary.queries()) problems += "the host's DNS responder received a query from " + from + "; ";
  if (!problems.empty()) fail(problems);
}

constexpr std::array<Probe, 3> kProbes{{
    {Suite::EgressClosed, "EC-1", "the-host-loopback-is-unreachable",
     "services bound to the host's loopback (databases, metadata proxies, the engine's API) trust local callers",
     kExec, loopback_unreachable},
    {Suite::EgressClosed, "EC-2", "every-host-address-is-unreachable",
     "a closed sandbox that reaches the host's own addresses reaches whatever they route to", kExec,
     host_addresses_unreachable},
    {Suite::EgressClosed, "EC-3", "a-name-does-not-resolve",
     "DNS is an exfiltration channel of its own: a closed sandbox must get no answer from any resolver", kExec,
     name_does_not_resolve},
}};

}  // namespace

std::span<const Probe> egress_closed_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
