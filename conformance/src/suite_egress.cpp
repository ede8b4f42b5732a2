// EGRESS (conformance.md §4.5): an allowlisted host is reachable and a host off the list is
// not. Only the outcome an L3-severing and an L7-proxying backend share is asserted:
// "reached" means the fetch exited 0 with a 2xx status.
#include <array>

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

constexpr std::array<Probe, 2> kProbes{{
    {Suite::Egress, "EG-1", "an-allowed-host-is-reachable",
     "positive control: a backend that severs everything passes the deny probe", {Capability::Exec},
     allowed_reachable},
    {Suite::Egress, "EG-2", "a-denied-host-is-refused",
     "the allowlist is the whole network the workload may reach", {Capability::Exec}, denied_refused},
}};

}  // namespace

std::span<const Probe> egress_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
