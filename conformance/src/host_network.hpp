#pragma once
// Host-side instruments of EGRESS_CLOSED: the host's own addresses, a TCP listener that
// records every connection that arrives, and a tiny DNS responder that answers every query
// and records it. Internal.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace maf::sandbox::conformance::detail {

struct HostAddress {
  int family = 0;        ///< AF_INET or AF_INET6
  std::string text;      ///< numeric, e.g. "192.0.2.2" or "fd00::2"
  bool loopback = false;
};

/// Every address of every interface that is up (getifaddrs), deduplicated. IPv6 link-local
/// addresses are left out: reaching them needs a scope id the guest's interfaces do not share.
std::vector<HostAddress> host_addresses();

/// A listening socket per address family on the wildcard address (so every host address is
/// covered), ephemeral ports. The kernel completes a connection into the backlog without
/// accept(), so a guest that got through is seen by drain() even after it exited.
class TcpCanary {
public:
  TcpCanary();
  ~TcpCanary();
  TcpCanary(const TcpCanary&) = delete;
  TcpCanary& operator=(const TcpCanary&) = delete;
  /// 0 when the family could not be bound (e.g. IPv6 disabled).
  std::uint16_t port(int family) const;
  /// Accepts and closes every queued connection; returns the local address each arrived at.
  std::vector<std::string> drain();

private:
  int v4_ = -1, v6_ = -1;
  std::uint16_t port4_ = 0, port6_ = 0;
};

/// A UDP responder per family on the wildcard address that answers every query with an A
/// record, from its own thread while the guest waits for the answer.
class DnsCanary {
public:
  DnsCanary();
  ~DnsCanary();
  DnsCanary(const DnsCanary&) = delete;
  DnsCanary& operator=(const DnsCanary&) = delete;
  std::uint16_t port(int family) const;
  /// Source addresses of every datagram received so far.
  std::vector<std::string> queries() const;

  /// A standard query for `name`, type A, recursion desired.
  static std::string query_for(const std::string& name);

private:
  void serve();
  int v4_ = -1, v6_ = -1;
  std::uint16_t port4_ = 0, port6_ = 0;
  int stop_pipe_[2] = {-1, -1};
  mutable std::mutex mutex_;
  std::vector<std::string> queries_;
  std::thread thread_;
};

}  // namespace maf::sandbox::conformance::detail
