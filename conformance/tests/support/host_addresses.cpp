#include "host_addresses.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace maf::sandbox::conformance::test {

bool host_has_non_loopback_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    if (i->ifa_addr->sa_family == AF_INET) found = true;
    if (i->ifa_addr->sa_family == AF_INET6 &&
        !IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      found = true;
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace maf::sandbox::conformance::test
