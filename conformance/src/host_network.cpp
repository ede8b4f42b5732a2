#include "host_network.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace maf::sandbox::conformance::detail {
namespace {

std::string numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

/// A wildcard socket of `type` for `family`, bound to an ephemeral port; -1 when impossible.
int bind_wildcard(int family, int type, std::uint16_t& port) {
  const int fd = ::socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof *a;
  } else {
    int one = 1;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    len = sizeof *a;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || (type == SOCK_STREAM && ::listen(fd, 64) != 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    ::close(fd);
    return -1;
  }
  port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return fd;
}

}  // namespace

std::vector<HostAddress> host_addresses() {
  std::vector<HostAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw std::runtime_error(std::string("getifaddrs: ") + std::strerror(errno));
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr)) continue;
    HostAddress a{family, numeric(i->ifa_addr), (i->ifa_flags & IFF_LOOPBACK) != 0};
    if (std::none_of(out.begin(), out.end(), [&](const HostAddress& b) { return b.text == a.text; })) out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

TcpCanary::TcpCanary() {
  v4_ = bind_wildcard(AF_INET, SOCK_STREAM, port4_);
  v6_ = bind_wildcard(AF_INET6, SOCK_STREAM, port6_);
  if (v4_ < 0 && v6_ < 0) throw std::runtime_error("cannot open a TCP listener on the host");
}

TcpCanary::~TcpCanary() {
  if (v4_ >= 0) ::close(v4_);
  if (v6_ >= 0) ::close(v6_);
}

std::uint16_t TcpCanary::port(int family) const { return family == AF_INET ? port4_ : port6_; }

std::vector<std::string> TcpCanary::drain() {
  std::vector<std::string> arrived;
  for (int fd : {v4_, v6_}) {
    if (fd < 0) continue;
    for (;;) {
      const int conn = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) break;
      sockaddr_storage local{};
      socklen_t len = sizeof local;
      ::getsockname(conn, reinterpret_cast<sockaddr*>(&local), &len);
      arrived.push_back(numeric(reinterpret_cast<sockaddr*>(&local)));
      ::close(conn);
    }
  }
  return arrived;
}

DnsCanary::DnsCanary() {
  v4_ = bind_wildcard(AF_INET, SOCK_DGRAM, port4_);
  v6_ = bind_wildcard(AF_INET6, SOCK_DGRAM, port6_);
  if (v4_ < 0 && v6_ < 0) throw std::runtime_error("cannot open a UDP socket on the host");
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  thread_ = std::thread([this] { serve(); });
}

DnsCanary::~DnsCanary() {
  const char bye = 'x';
  (void)!::write(stop_pipe_[1], &bye, 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {v4_, v6_, stop_pipe_[0], stop_pipe_[1]})
    if (fd >= 0) ::close(fd);
}

std::uint16_t DnsCanary::port(int family) const { return family == AF_INET ? port4_ : port6_; }

std::vector<std::string> DnsCanary::queries() const {
  std::lock_guard lock(mutex_);
  return queries_;
}

std::string DnsCanary::query_for(const std::string& name) {
  // Id 0x4D41 ("MA"): the answer's first byte is printable, which lets a shell read it.
  std::string q{'\x4D', '\x41', '\x01', '\x00', '\x00', '\x01', '\x00', '\x00', '\x00', '\x00', '\x00', '\x00'};
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto dot = std::min(name.find('.', start), name.size());
    q.push_back(static_cast<char>(dot - start));
    q.append(name, start, dot - start);
    start = dot + 1;
  }
  q.push_back('\0');
  q.append({'\x00', '\x01', '\x00', '\x01'});  // type A, class IN
  return q;
}

void DnsCanary::serve() {
  pollfd fds[3] = {{stop_pipe_[0], POLLIN, 0}, {v4_, POLLIN, 0}, {v6_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    for (int i = 1; i < 3; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & POLLIN)) continue;
      char buf[512];
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const auto n = ::recvfrom(fds[i].fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      {
        std::lock_guard lock(mutex_);
        queries_.push_back(numeric(reinterpret_cast<sockaddr*>(&from)));
      }
      if (n < 12) continue;
      // Echo the question, answer it: A 192.0.2.53, TTL 60, name by pointer to offset 12.
      std::string answer(buf, static_cast<std::size_t>(n));
      answer[2] = '\x81';
      answer[3] = '\x80';
      answer[6] = '\x00';
      answer[7] = '\x01';
      answer.append({'\xC0', '\x0C', '\x00', '\x01', '\x00', '\x01', '\x00', '\x00', '\x00', '\x3C', '\x00', '\x04',
                     '\xC0', '\x00', '\x02', '\x35'});
      ::sendto(fds[i].fd, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }
}

}  // namespace maf::sandbox::conformance::detail
