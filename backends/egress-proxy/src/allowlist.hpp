#pragma once
/// @file allowlist.hpp
/// The egress proxy's policy: which (host, port) a CONNECT tunnel or a forwarded plain-HTTP
/// request may reach.
///
/// An entry is `host` or `host:port` (`[v6]:port` for an IPv6 literal), compared to the
/// request's host case-insensitively and exactly — no wildcards, no suffix match: a name the
/// operator did not write is not reachable. The port policy:
///   - `host`       allows CONNECT to port 443 and plain HTTP to port 80, nothing else;
///   - `host:port`  allows that one port, for both CONNECT and plain HTTP.
/// Entries are separated by commas and/or whitespace; an empty list allows nothing.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "request.hpp"

namespace maf::sandbox::egress_proxy {

struct AllowEntry {
  std::string host;  ///< normalised as request.hpp's normalize_host
  std::optional<std::uint16_t> port;
};

class Allowlist {
public:
  /// Throws std::invalid_argument naming the first entry that is not a valid host[:port].
  static Allowlist parse(std::string_view list);

  void add(const Allowlist& other);
  bool allows(RequestKind kind, const Target& target) const;
  bool empty() const noexcept { return entries_.empty(); }
  const std::vector<AllowEntry>& entries() const noexcept { return entries_; }
  /// The entries as written back (`host` or `host:port`), comma-joined; "nothing" if empty.
  std::string describe() const;

private:
  std::vector<AllowEntry> entries_;
};

}  // namespace maf::sandbox::egress_proxy
