#pragma once
/// @file pinned_names.hpp
/// Names the operator pins to addresses (`--resolve host=ip`, `--hosts-file`), and the
/// "globally routable" test applied to every address the proxy found by itself.
///
/// Why pins exist: the proxy resolves names itself (the sandbox never resolves an external
/// name), and a static glibc binary's getaddrinfo cannot load NSS modules, so a FROM-scratch
/// image may not resolve through DNS at all. Pins make resolution explicit and testable.
/// Why pinned addresses skip the routability test: the operator wrote them; an address that
/// came from DNS (or an IP literal the client sent) must be globally routable, so a DNS
/// answer cannot point an allowed name at the host, the engine's bridge or a private peer.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::egress_proxy {

class PinnedNames {
public:
  /// `host=ip` (ip may be IPv4 or IPv6, brackets optional). Throws std::invalid_argument.
  void add_pin(std::string_view host_equals_ip);
  /// /etc/hosts syntax: `ip name [name...]`, `#` comments. Throws std::invalid_argument
  /// naming the first bad line.
  void add_hosts_text(std::string_view text);
  /// The pinned addresses of a normalised host, in the order given.
  const std::vector<std::string>* lookup(const std::string& host) const;
  bool empty() const noexcept { return pins_.empty(); }

private:
  void pin(std::string_view host, std::string_view ip);
  std::map<std::string, std::vector<std::string>> pins_;
};

/// Canonical text of an IP literal, or nullopt when `text` is not one.
std::optional<std::string> canonical_ip(std::string_view text);

/// False for loopback, private, shared, link-local, multicast, documentation, benchmark,
/// reserved and unspecified addresses, and for IPv4-mapped/NAT64 forms of those.
bool is_globally_routable(std::string_view ip);

}  // namespace maf::sandbox::egress_proxy
