// libFuzzer target for the egress proxy's reader of HTTP/1.1 inside a terminated tunnel and
// its chunked-body scanner (backends/egress-proxy/src/tunnel_http.hpp), plus the rule check
// every request there gets (l7_rules.hpp). The fuzz preset builds no backends, so their
// sources are compiled in directly; they use no Asio and no OpenSSL for that reason.
//
// Invariants: nothing throws; an accepted request names the tunnel's host (it was checked),
// its upstream head ends in exactly one blank line (no injection through the target or a
// field); a request the rule allows goes upstream with a target whose path is canonical and
// matches the rule; the scanner never consumes more than it was given.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "../backends/egress-proxy/src/allowlist.cpp"
#include "../backends/egress-proxy/src/l7_rules.cpp"
#include "../backends/egress-proxy/src/pinned_names.cpp"
#include "../backends/egress-proxy/src/request.cpp"
#include "../backends/egress-proxy/src/tunnel_http.cpp"

using namespace maf::sandbox::egress_proxy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static const L7Rules rules =
      L7Rules::parse_json(R"([{"host":"allowed.test","methods":["GET","POST"],"paths":["/repo/","/x*"]}])");
  const L7Rule& rule = rules.rules().front();
  const Target tunnel{"allowed.test", 443};

  const auto end = find_head_end(input);
  const std::string_view head = end == std::string_view::npos ? input : input.substr(0, end);
  const TunnelParse r = parse_tunnel_request(head, tunnel, kDefaultMaxHeadBytes);
  if (r.request) {
    const L7Verdict v = check_request(rule, r.request->method, r.request->target, tunnel.host);
    if (v.allowed) {
      const std::string up = tunnel_upstream_head(*r.request, v.upstream_target);
      if (find_head_end(up) != up.size()) std::abort();
      const auto path = v.upstream_target.substr(0, v.upstream_target.find('?'));
      const auto again = maf::sandbox::canonicalize_request_path(path);
      if (!again.value || again.value->path != path) std::abort();
      if (!maf::sandbox::egress_path_matches("/repo/", path) && !maf::sandbox::egress_path_matches("/x*", path))
        std::abort();
    } else if (v.reason.empty() || refusal_body(v.reason).find('\n') + 1 != refusal_body(v.reason).size()) {
      std::abort();
    }
  } else if (r.status != 400 && r.status != 403 && r.status != 431) {
    std::abort();
  }

  // The rest of the input as a chunked body, fed in two pieces.
  const std::string_view body = end == std::string_view::npos ? input : input.substr(end);
  ChunkedScanner scanner;
  const std::size_t half = body.size() / 2;
  const auto a = scanner.feed(body.substr(0, half));
  if (a.consumed > half) std::abort();
  if (!a.error && !a.done) {
    const auto b = scanner.feed(body.substr(half));
    if (b.consumed > body.size() - half) std::abort();
  }
  return 0;
}
