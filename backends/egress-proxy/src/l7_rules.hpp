#pragma once
/// @file l7_rules.hpp
/// Method and path rules (C-9, C-10; docs/backends/egress-proxy.md "Terminated hosts"): a
/// host named by a rule is not tunnelled opaquely but terminated, and each request inside is
/// checked against the rule. Free of Asio and OpenSSL, so the unit tests and the fuzz target
/// use it as it is.
///
/// The rules reach the proxy as one JSON array (`--rules` / `$MAF_SANDBOX_RULES`):
/// `[{"host":"allowed.test","methods":["GET"],"paths":["/repo/"]}, ...]`, `host` in the
/// allowlist's entry syntax (`host`, `host:port`, `*.domain`), `methods` and `paths` each
/// optional but not both absent. A path is checked with the spec's own canonicaliser
/// (include/maf/sandbox/egress_path.hpp), so the proxy and the spec cannot read one apart.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allowlist.hpp"

namespace maf::sandbox::egress_proxy {

struct L7Rule {
  AllowEntry host;
  std::optional<std::vector<std::string>> methods;  ///< absent: every method
  std::optional<std::vector<std::string>> paths;    ///< absent: every path
  /// The rule as a refusal names it: `allowed.test methods [GET] paths [/repo/]`.
  std::string describe() const;
};

/// The verdict on one request inside a terminated tunnel (or one plain-HTTP request).
struct L7Verdict {
  bool allowed = false;
  int status = 0;               ///< 403 (a rule refused) or 400 (no canonical path) when refused
  std::string canonical_path;   ///< empty when the path had no canonical form
  std::string upstream_target;  ///< canonical path plus "?query" as sent upstream; set when allowed
  std::string reason;           ///< one line: why refused (empty when allowed)
};

class L7Rules {
public:
  /// Throws std::invalid_argument naming the first bad rule (its index and what is wrong).
  static L7Rules parse_json(std::string_view json);
  void add(const L7Rules& other);
  /// Terminate `host` with a rule that narrows nothing (every method, every path): how the
  /// proxy sees every request of a sandbox with brokered credentials (CRED-8).
  void add_whole(const AllowEntry& host) { rules_.push_back(L7Rule{host, std::nullopt, std::nullopt}); }
  bool empty() const noexcept { return rules_.empty(); }
  const std::vector<L7Rule>& rules() const noexcept { return rules_; }

  /// The rule covering this CONNECT (`connect`) or plain-HTTP target, or null: then the
  /// host is tunnelled or forwarded whole if the allowlist allows it. Ports follow the
  /// allowlist: a bare host covers CONNECT 443 and HTTP 80, `host:port` that port.
  const L7Rule* find(bool connect, const std::string& host, std::uint16_t port) const;

private:
  std::vector<L7Rule> rules_;
};

/// Check one request (method, origin-form target) against `rule`. The refusal reason is one
/// line naming method, path, host and the rule, for the 403 body and the decision log.
L7Verdict check_request(const L7Rule& rule, std::string_view method, std::string_view target, std::string_view host);

/// The 403/400/502 body the proxy answers with: "maf-sandbox egress proxy: <reason>\n".
std::string refusal_body(std::string_view reason);

}  // namespace maf::sandbox::egress_proxy
