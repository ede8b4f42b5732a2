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

#include "decision_log.hpp"
#include "options.hpp"
#include "terminator.hpp"

namespace maf::sandbox::egress_proxy {

class ProxyServer {
public:
  /// `terminator`: serves CONNECTs to hosts with method/path rules; null when there are none.
  ProxyServer(boost::asio::io_context& io, const ProxyOptions& options, DecisionLog& log, Terminator* terminator)
      : io_(io), options_(options), log_(log), terminator_(terminator) {}

  /// Accepts until the acceptor is closed.
  boost::asio::awaitable<void> run(boost::asio::ip::tcp::acceptor acceptor);

private:
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket client);

  boost::asio::io_context& io_;
  const ProxyOptions& options_;
  DecisionLog& log_;
  Terminator* terminator_;
  std::size_t active_ = 0;
};

}  // namespace maf::sandbox::egress_proxy
