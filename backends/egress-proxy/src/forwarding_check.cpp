// The proxy's start-up refusal to run inside a router (forwarding_check.hpp).
#include "forwarding_check.hpp"

namespace maf::sandbox::egress_proxy {
namespace {

/// The first character of the file, '0' or '1' for these boolean settings.
char first_digit(const std::string& text) {
  for (char c : text)
    if (c != ' ' && c != '\t' && c != '\n') return c;
  return '?';
}

}  // namespace

std::optional<std::string> forwarding_problem(const ReadSysctl& read) {
  const std::string v4 = "/proc/sys/net/ipv4/ip_forward";
  const std::string v6 = "/proc/sys/net/ipv6/conf/all/forwarding";
  const auto ipv4 = read(v4);
  if (!ipv4) return "cannot read " + v4 + ", so nothing shows this namespace does not route between its networks";
  if (first_digit(*ipv4) != '0')
    return "this network namespace forwards IPv4 packets (net.ipv4.ip_forward=" + std::string(1, first_digit(*ipv4)) +
           "): a guest could route raw frames through the proxy past the allowlist; create the proxy with "
           "--sysctl net.ipv4.ip_forward=0";
  if (const auto ipv6 = read(v6); ipv6 && first_digit(*ipv6) != '0')
    return "this network namespace forwards IPv6 packets (net.ipv6.conf.all.forwarding=" +
           std::string(1, first_digit(*ipv6)) +
           "): a guest could route raw frames through the proxy past the allowlist; create the proxy with "
           "--sysctl net.ipv6.conf.all.forwarding=0";
  return std::nullopt;
}

}  // namespace maf::sandbox::egress_proxy
