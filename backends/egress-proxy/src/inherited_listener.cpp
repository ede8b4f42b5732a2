// `--listen-fd N` (inherited_listener.hpp).
#include "inherited_listener.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace maf::sandbox::egress_proxy {

std::optional<InheritedListener> take_inherited_listener(std::vector<std::string>& args) {
  std::optional<std::string> named;
  for (std::size_t i = 0; i < args.size();) {
    if (args[i] == "--listen-fd") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--listen-fd needs a descriptor number");
      named = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else if (args[i].rfind("--listen-fd=", 0) == 0) {
      named = args[i].substr(std::string("--listen-fd=").size());
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  if (!named) return std::nullopt;
  if (named->empty() || named->size() > 6 || named->find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("--listen-fd '" + *named + "' is not a descriptor number");
  InheritedListener l;
  l.fd = std::stoi(*named);
  int listening = 0, domain = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(l.fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0)
    throw std::invalid_argument("--listen-fd " + *named + " is not an open socket: " + std::strerror(errno));
  if (!listening) throw std::invalid_argument("--listen-fd " + *named + " is a socket that is not listening");
  len = sizeof domain;
  if (::getsockopt(l.fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
    throw std::invalid_argument("--listen-fd " + *named + ": cannot read its domain: " + std::strerror(errno));
  l.unix_domain = domain == AF_UNIX;
  return l;
}

}  // namespace maf::sandbox::egress_proxy
