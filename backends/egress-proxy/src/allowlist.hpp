#pragma once
/// @file allowlist.hpp
/// The egress proxy's policy: which (host, port) a CONNECT tunnel or a forwarded plain-HTTP
/// request may reach.
///
/// An entry is `host` or `host:port` (`[v6]:port`, or a bare IPv6 literal without a port),
/// compared to the request's host case-insensitively and exactly, or a wildcard name
/// `*.example.com[:port]`, which covers exactly ONE label in place of the `*`
/// (`a.example.com`, never `example.com` itself nor `a.b.example.com`) — the rule of TLS
/// certificate wildcards (RFC 6125 section 6.4.3), not the shell glob of the Python reference, whose
/// `*` also spans dots. A name the operator did not write is reachable only through a `*`
/// the operator wrote, and one label deep. The port policy:
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
  std::string host;  ///< normalised as request.hpp's normalize_host; for a wildcard, the part after "*."
  std::optional<std::uint16_t> port;
  bool wildcard = false;  ///< `*.host`: one label, then `host`
  /// Whether `name` (normalised) is this entry's host.
  bool matches(const std::string& name) const;
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
