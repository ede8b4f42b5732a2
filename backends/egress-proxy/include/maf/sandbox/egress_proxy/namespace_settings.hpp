#pragma once
/// @file egress_proxy/namespace_settings.hpp
/// The network-namespace settings every backend gives the egress proxy's container (issue 22;
/// docs/backends/egress-proxy.md *Threat model*). Header-only, shared by the Docker and wslc
/// backends so the two topologies cannot drift apart.
///
/// The proxy is dual-homed on the sandbox's internal network and on the outbound one. With
/// the forwarding a namespace inherits from a Docker host (ip_forward=1, rp_filter=0) it was a
/// router between them for any frame a guest could craft. So: no forwarding (IPv4, IPv6), strict
/// reverse-path filtering, no ICMP redirects taken or sent, no source routes. The proxy itself
/// refuses to start if forwarding is still on (forwarding_check.hpp), so an engine that drops a
/// setting fails loudly.

#include <string>
#include <utility>
#include <vector>

namespace maf::sandbox::egress_proxy {

/// `key=value` pairs for `--sysctl` (Engine API: `HostConfig.Sysctls`), all namespaced.
inline std::vector<std::pair<std::string, std::string>> proxy_sysctls() {
  return {{"net.ipv4.ip_forward", "0"},
          {"net.ipv4.conf.all.forwarding", "0"},
          {"net.ipv4.conf.default.forwarding", "0"},
          {"net.ipv6.conf.all.forwarding", "0"},
          {"net.ipv6.conf.default.forwarding", "0"},
          {"net.ipv4.conf.all.rp_filter", "1"},
          {"net.ipv4.conf.default.rp_filter", "1"},
          {"net.ipv4.conf.all.accept_redirects", "0"},
          {"net.ipv4.conf.default.accept_redirects", "0"},
          {"net.ipv4.conf.all.send_redirects", "0"},
          {"net.ipv4.conf.default.send_redirects", "0"},
          {"net.ipv4.conf.all.accept_source_route", "0"},
          {"net.ipv6.conf.all.accept_redirects", "0"},
          {"net.ipv6.conf.default.accept_redirects", "0"}};
}

}  // namespace maf::sandbox::egress_proxy
