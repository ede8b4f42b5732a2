#pragma once
/// @file proxy_server.hpp
/// The proxy's network side: accept, read one bounded head, decide, resolve, dial, then
/// tunnel (CONNECT) or forward (plain HTTP) until both sides close or the link goes idle.
/// Single-threaded on one io_context; every wait is bounded (head, dial, idle).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "control.hpp"
#include "decision_log.hpp"
#include "options.hpp"
#include "terminator.hpp"

namespace maf::sandbox::egress_proxy {

class ProxyServer {
public:
  /// `terminator`: serves CONNECTs to hosts with method/path rules; null when there are none.
  ProxyServer(boost::asio::io_context& io, ProxyOptions& options, DecisionLog& log, Terminator* terminator)
      : io_(io), options_(options), log_(log), terminator_(terminator) {}

  /// Accepts until the acceptor is closed.
  boost::asio::awaitable<void> run(boost::asio::ip::tcp::acceptor acceptor);

  /// The host's decider (control.hpp), asked about a request no rule covers; null = deny.
  void attach_control(ControlChannel* control) noexcept { control_ = control; }

  /// EGU-2: closes every open opaque tunnel or forward whose target the current allowlist no
  /// longer allows (a terminated host keeps its rule, which an update never changes) and
  /// returns how many it closed.
  std::size_t close_disallowed();

private:
  struct OpenLink {
    RequestKind kind;
    Target target;
    std::function<void()> close;
  };
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket client);

  boost::asio::io_context& io_;
  ProxyOptions& options_;  ///< mutable for the control channel's updates and allow-sandbox answers
  DecisionLog& log_;
  Terminator* terminator_;
  std::size_t active_ = 0;
  ControlChannel* control_ = nullptr;
  std::uint64_t next_link_ = 0;
  std::map<std::uint64_t, OpenLink> links_;
};

}  // namespace maf::sandbox::egress_proxy
