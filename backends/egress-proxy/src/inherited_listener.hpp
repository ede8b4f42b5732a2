#pragma once
/// @file inherited_listener.hpp
/// `--listen-fd N`: serve on a listening socket the caller made and handed down as fd N
/// instead of binding `--listen` (issue 47). The process backend makes a unix-domain socket
/// in the sandbox's host-side directory and binds it into the guest, whose network namespace
/// has nothing but loopback: the guest reaches the proxy through that file alone.
///
/// A unix-domain listener has no packet path: nothing a guest sends through it is an IP
/// packet the proxy's namespace could forward. So the forwarding check (forwarding_check.hpp),
/// which guards a proxy whose peers share a link with it, does not apply to one, and is
/// skipped (the host running the process backend may well forward for its own reasons).
/// Kept apart from options.cpp so the option parser stays as it is.

#include <optional>
#include <string>
#include <vector>

namespace maf::sandbox::egress_proxy {

/// What `--listen-fd` named, checked.
struct InheritedListener {
  int fd = -1;
  bool unix_domain = false;  ///< AF_UNIX: no packet path, no forwarding check
};

/// Removes every `--listen-fd N` from `args` and checks the last one names a socket in the
/// listening state (SO_ACCEPTCONN). nullopt when absent. Throws std::invalid_argument naming
/// the value when N is not a number, not open, not a socket or not listening.
std::optional<InheritedListener> take_inherited_listener(std::vector<std::string>& args);

}  // namespace maf::sandbox::egress_proxy
