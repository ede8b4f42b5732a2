// libFuzzer target: the egress proxy's decision-log reader (support/proxy_log.hpp,
// docs/backends/egress-proxy.md; docs/observability.md OBS-7), which Docker's drain and WSLC's disposal feed with a
// proxy's log — bytes a guest influences through the hosts it asks for.
//
// Invariants: it never throws; every decision is one of the four names with a port of
// 0-65535; at most kMaxProxyDecisions are kept; a cut read or a full tail is flagged
// `truncated` without changing the decisions; the reading is the same with CRLF or LF line
// ends (wslc relays raw bytes, a Windows-side writer may add CRs).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "line_ends.hpp"
#include "maf/sandbox/support/proxy_log.hpp"

using namespace maf::sandbox::support;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ProxyDecisions parsed;
  try {
    parsed = parse_proxy_decisions(text, false, 0);
  } catch (...) {
    std::abort();  // a log that cannot be read holds no decisions, never an exception
  }
  if (parsed.decisions.size() > kMaxProxyDecisions) std::abort();
  for (const auto& d : parsed.decisions) {
    if (d.decision != "ALLOW" && d.decision != "DENY" && d.decision != "DENY-NONGLOBAL" && d.decision != "UNREACHABLE")
      std::abort();
    if (d.port < 0 || d.port > 65535) std::abort();
  }
  // The readiness line's CA (issue 47 reads it too): never throws, and only ever a string
  // that was inside the input.
  try {
    if (const auto ca = ca_certificate_in_readiness(text); ca && ca->size() > text.size()) std::abort();
  } catch (...) {
    std::abort();
  }
  const ProxyDecisions cut = parse_proxy_decisions(text, true, 0);
  if (!cut.truncated || cut.decisions != parsed.decisions) std::abort();
  const ProxyDecisions tail = parse_proxy_decisions(text, false, 1);
  if ((!text.empty() && !tail.truncated) || tail.decisions != parsed.decisions) std::abort();

  // Line ends: an input whose every CR precedes a LF reads the same with those CRs removed.
  if (const auto lf = maf_fuzz::with_lf_line_ends(text)) {
    const ProxyDecisions unix_ends = parse_proxy_decisions(*lf, false, 0);
    if (unix_ends.decisions != parsed.decisions || unix_ends.truncated != parsed.truncated) std::abort();
  }
  return 0;
}
