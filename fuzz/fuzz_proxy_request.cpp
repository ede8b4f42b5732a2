// libFuzzer target for the egress proxy's request-head parser and allowlist parser
// (backends/egress-proxy/src/request.hpp, allowlist.hpp). The fuzz preset builds no
// backends, so the parser's sources are compiled into this target directly; they use no
// Asio for exactly this reason.
//
// Invariants: parsing never throws and yields a request or a 400/431; an accepted target
// host is already normalised and its port non-zero; a forwarded head ends in exactly one
// blank line (no header injection through the target) and names the decided host; an
// allowlist built from the input never allows a host it does not list.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "../backends/egress-proxy/src/allowlist.cpp"
#include "../backends/egress-proxy/src/pinned_names.cpp"
#include "../backends/egress-proxy/src/request.cpp"

using namespace maf::sandbox::egress_proxy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // The proxy only ever parses up to the first blank line; fuzz both that and raw input.
  const auto end = find_head_end(input);
  for (std::string_view head : {input, end == std::string_view::npos ? input : input.substr(0, end)}) {
    const ParseResult r = parse_request_head(head);
    if (!r.request) {
      if (r.status != 400 && r.status != 431) std::abort();
      continue;
    }
    const ProxyRequest& q = *r.request;
    if (q.target.port == 0 || q.target.host.empty()) std::abort();
    const bool v6 = q.target.host.find(':') != std::string::npos;
    const auto again = v6 ? canonical_ip(q.target.host) : normalize_host(q.target.host);
    if (!again || *again != q.target.host) std::abort();
    if (q.kind == RequestKind::Connect) {
      if (!q.upstream_head.empty() || q.method != "CONNECT") std::abort();
    } else {
      if (find_head_end(q.upstream_head) != q.upstream_head.size()) std::abort();
      const std::string host_line = "\r\nHost: " + (v6 ? "[" + q.target.host + "]" : q.target.host);
      if (q.upstream_head.find(host_line) == std::string::npos) std::abort();
    }
    // The decided target is allowed by a list naming exactly it, and by nothing else.
    const std::string entry = (v6 ? "[" + q.target.host + "]" : q.target.host) + ":" + std::to_string(q.target.port);
    if (!Allowlist::parse(entry).allows(q.kind, q.target)) std::abort();
    if (Allowlist::parse("other.invalid").allows(q.kind, q.target) && q.target.host != "other.invalid") std::abort();
  }

  try {
    const Allowlist list = Allowlist::parse(input);
    for (const auto& e : list.entries()) {
      // A wildcard entry allows one label in front of its base (allowlist.hpp), never more.
      const std::string name = e.wildcard ? "x." + e.host : e.host;
      if (!list.allows(RequestKind::Connect, Target{name, e.port.value_or(443)})) std::abort();
      if (e.wildcard && e.matches("x.y." + e.host)) std::abort();
    }
    (void)list.describe();
  } catch (const std::invalid_argument&) {
  }
  try {
    PinnedNames pins;
    pins.add_hosts_text(input);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
