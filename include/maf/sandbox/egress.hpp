#pragma once
/// @file egress.hpp
/// Egress modes and allowlist rules (C-5…C-10).
///
/// Modes are matched by set membership only (C-5): there is no order between them, so no
/// code path can "upgrade" or "downgrade" a workload's network posture.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "maf/sandbox/egress_path.hpp"
#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// The one network mode a workload runs in.
enum class Egress {
  Unrestricted,  ///< "unrestricted": no confinement
  Allowlist,     ///< "allowlist": deny by default; allow exactly the spec's egress_allow hosts
  Closed,        ///< "closed": no network; the spec default
};

template <>
struct EnumTraits<Egress> {
  static constexpr std::string_view type_name = "Egress";
  static constexpr std::array<std::pair<Egress, std::string_view>, 3> values{{
      {Egress::Unrestricted, "unrestricted"},
      {Egress::Allowlist, "allowlist"},
      {Egress::Closed, "closed"},
  }};
};

constexpr std::string_view to_string(Egress e) noexcept { return enum_value(e); }
/// C-6: a backend may hand modes over as strings; they match only once parsed.
inline Egress parse_egress(std::string_view text) { return parse_enum<Egress>(text); }

using EgressSet = EnumSet<Egress>;

/// One allowlist entry narrowed to HTTP methods (C-7) and/or request paths (C-10).
/// `methods` absent = every method; `paths` absent = every path.
///
/// The constructor validates methods and paths: each method an RFC 9110 token, spelled
/// exactly as given (case-sensitive); each path a pattern of egress_path.hpp (`/exact`,
/// `/prefix/`, `/prefix*`, in canonical form); no duplicates in either list, and an explicit
/// list must not be empty. Each refusal is a ValueError naming the host and the entry.
/// The host is validated by SandboxSpec (egress_host_problem), not here.
class EgressRule {
public:
  explicit EgressRule(std::string host, std::optional<std::vector<std::string>> methods = std::nullopt,
                      std::optional<std::vector<std::string>> paths = std::nullopt);

  const std::string& host() const noexcept { return host_; }
  const std::optional<std::vector<std::string>>& methods() const noexcept { return methods_; }
  const std::optional<std::vector<std::string>>& paths() const noexcept { return paths_; }
  /// Neither methods nor paths: the rule is the bare host (C-8).
  bool narrows() const noexcept { return methods_ || paths_; }
  friend bool operator==(const EgressRule&, const EgressRule&) = default;

private:
  std::string host_;
  std::optional<std::vector<std::string>> methods_;
  std::optional<std::vector<std::string>> paths_;
};

/// An `egress_allow` entry: a bare host (all methods, all paths) or a narrowing rule.
using EgressEntry = std::variant<std::string, EgressRule>;

/// The host an entry names.
const std::string& egress_entry_host(const EgressEntry& entry) noexcept;

/// Why `host` is not an `egress_allow` host, or nullopt when it is one (issue 22). A host is
///   - a DNS name: ASCII labels of letters, digits, '-' (not at either end) and '_', 1–63
///     characters each, 253 in all, an optional trailing dot, a last label not all digits;
///   - a wildcard name `*.example.com`: `*` as the whole leftmost label, over at least two
///     labels (never `*.com`); which names it covers is the enforcing proxy's rule
///     (docs/backends/egress-proxy.md);
///   - an IPv4 literal (dotted quad) or an IPv6 literal (bare, or bracketed `[::1]`);
/// each optionally followed by `:port` (1–65535; IPv6 only bracketed), the rule shape the
/// shipped proxy enforces. Nothing else: no commas, spaces, '@', '#', '/', schemes or paths,
/// which a proxy's list syntax or a URL parser would read as something else.
std::optional<std::string> egress_host_problem(std::string_view host);

/// True for an RFC 9110 `token` (1*tchar).
bool is_http_token(std::string_view text) noexcept;

/// C-8 canonicalisation: rules narrowing nothing become bare hosts, hosts compare
/// case-insensitively, equivalent entries (equal method sets and equal path sets) collapse
/// (first spelling and order kept), and conflicting entries for one host throw ValueError
/// naming the host.
std::vector<EgressEntry> canonicalize_egress_allow(std::vector<EgressEntry> entries);

}  // namespace maf::sandbox
