// EGRESS (EG-1, EG-2): an allowlisted host is reachable and a host off the list is
// not. Only the outcome an L3-severing and an L7-proxying backend share is asserted:
// "reached" means the fetch exited 0 with a 2xx status. EG-3 (this port's own, issue 22)
// attacks below HTTP: raw frames must not be routed anywhere the runner listens.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>
#include <thread>

#include "host_network.hpp"
#include "maf/sandbox/conformance/subject.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

const EgressTargets& targets(ProbeContext& c) {
  if (!c.egress) throw ConformanceUsageError("EGRESS needs an allowed and a denied URL");
  if (c.egress->exec_timeout < std::chrono::seconds(1))
    throw ConformanceUsageError("EGRESS exec_timeout must be at least 1 s");
  return *c.egress;
}

void allowed_reachable(ProbeContext& c) {
  const auto& t = targets(c);
  const auto got = c.subject.fetch_url(t.allowed_url, t.exec_timeout);
  if (!got.reached())
    fail("the allowlisted " + t.allowed_url + " was not reached (exit " + std::to_string(got.exit_code) +
         ", status " + quoted(got.http_code) + "): over-confinement, or a severed network");
}

void denied_refused(ProbeContext& c) {
  const auto& t = targets(c);
  const auto got = c.subject.fetch_url(t.denied_url, t.exec_timeout);
  if (got.reached())
    fail("the host off the allowlist answered: " + t.denied_url + " returned status " + got.http_code +
         " (the allowlist was widened)");
}

/// An address in `target`'s own /24 that is not `target` (.254, or .253 for a .254): a
/// source the next hop's reverse-path check and the host's would take as local to the
/// target's network — the issue-22 attack spoofed one in the outbound subnet.
std::string spoof_near(const std::string& target) {
  in_addr a{};
  ::inet_pton(AF_INET, target.c_str(), &a);
  unsigned char* b = reinterpret_cast<unsigned char*>(&a.s_addr);
  b[3] = b[3] == 254 ? 253 : 254;
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

/// EG-3: below HTTP. The guest writes raw IPv4/UDP frames (untagged and VID-0
/// priority-tagged, spoofed sources) to every next hop it knows, addressed to a UDP listener
/// the runner owns on every host address — which includes the host's side of the proxy's
/// outbound network (its bridge gateway). Nothing may arrive. A guest refused the raw socket
/// passes; a guest with no tool to try fails (nothing attempted proves nothing).
void raw_frames_not_routed(ProbeContext& c) {
  const auto& t = targets(c);
  std::vector<std::string> destinations;
  for (const auto& a : host_addresses())
    if (a.family == AF_INET && !a.loopback) destinations.push_back(a.text);
  if (destinations.empty()) throw ProbeNotApplicable("the host has no non-loopback IPv4 address to listen on");
  DnsCanary listener;  // a UDP socket on every host address that records each datagram's source
  const auto port = listener.port(AF_INET);
  if (port == 0) fail("no UDP listener could be opened on the host; nothing to judge by");
  // Talk to the allowed host first, so the guest's neighbour table holds its next hop (the
  // proxy, or a gateway) — the one a raw frame must be addressed to.
  (void)c.subject.fetch_url(t.allowed_url, t.exec_timeout);
  std::string problems, tried;
  bool attempted = false;
  for (const auto& d : destinations) {
    const auto spoofed = spoof_near(d);
    const auto a = c.subject.send_raw_frames(d, port, spoofed, "maf-sandbox-eg3", t.exec_timeout);
    using Result = RawFrameAttempt::Result;
    if (a.result == Result::NoTool)
      fail("the guest could not attempt raw frames: " + a.detail + "; nothing was attempted, so nothing is proven");
    attempted = attempted || a.result != Result::NoNeighbour;
    tried += d + " from " + spoofed + ": " + a.detail + "; ";
  }
  if (!attempted) fail("the guest knew no next hop to address a frame to: " + tried + "nothing was attempted");
  // The attack is one-way: no reply tells the guest, so the listener is given a moment for
  // a routed frame to land before it is read. A bounded observation window, not an assertion
  // on time: a late frame could only pass a broken backend, never fail a sound one.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (const auto& from : listener.queries())
    problems += "the host's listener received a datagram from " + from + "; ";
  if (!problems.empty()) fail(problems + "guest: " + tried);
}

constexpr std::array<Probe, 3> kProbes{{
    {Suite::Egress, "EG-1", "an-allowed-host-is-reachable",
     "positive control: a backend that severs everything passes the deny probe", {Capability::Exec},
     allowed_reachable},
    {Suite::Egress, "EG-2", "a-denied-host-is-refused",
     "the allowlist is the whole network the workload may reach", {Capability::Exec}, denied_refused},
    {Suite::Egress, "EG-3", "raw-frames-are-not-routed",
     "an allowlist enforced at HTTP is void if the guest's own frames are routed below it (issue 22)",
     {Capability::Exec}, raw_frames_not_routed},
}};

}  // namespace

std::span<const Probe> egress_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
