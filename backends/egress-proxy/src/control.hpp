#pragma once
/// @file control.hpp
/// The proxy's control channel (docs/backends/egress-proxy.md "Control channel", EGU-1…EGU-6):
/// a unix stream socket the proxy listens on (`--control ADDR`; `@name` is an abstract
/// socket of the proxy's own network namespace), never a TCP port, so nothing the guest can
/// reach over the network can speak it. Over it the host replaces the hosts allowed whole
/// (`update`: open tunnels to hosts no longer allowed are closed at once) and one connection
/// may become the host's decider (`decide`), asked about each request no rule covers and
/// given `decider_timeout` to answer (silence = deny).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "control_protocol.hpp"
#include "decision_log.hpp"
#include "options.hpp"

namespace maf::sandbox::egress_proxy {

/// What the decider said about one request (reason empty unless it gave one).
struct DeciderAnswer {
  DeciderVerdict verdict = DeciderVerdict::Deny;
  std::string reason;
  bool timed_out = false;
};

class ControlChannel {
public:
  /// `close_disallowed`: closes every open link the (already replaced) allowlist no longer
  /// allows and returns how many it closed (ProxyServer::close_disallowed).
  ControlChannel(boost::asio::io_context& io, ProxyOptions& options, DecisionLog& log,
                 std::function<std::size_t()> close_disallowed);

  /// Binds `address` (`@name`: abstract) and accepts until the io_context stops. Throws
  /// std::runtime_error naming the address when it cannot bind.
  void listen(const std::string& address);

  /// Whether a decider connection is attached now.
  bool has_decider() const noexcept { return static_cast<bool>(decider_); }
  /// Asks the decider about one request; a deny when no decider answers in time (or none is
  /// attached, or it goes away while asked).
  boost::asio::awaitable<DeciderAnswer> ask(std::string method, std::string host, std::uint16_t port);

private:
  using Socket = boost::asio::local::stream_protocol::socket;
  struct Pending {
    std::shared_ptr<boost::asio::steady_timer> wake;
    std::optional<DeciderAnswer> answer;
  };
  boost::asio::awaitable<void> accept_loop(boost::asio::local::stream_protocol::acceptor acceptor);
  boost::asio::awaitable<void> serve(std::shared_ptr<Socket> socket);
  std::string handle(const ControlMessage& m, const std::shared_ptr<Socket>& socket);

  boost::asio::io_context& io_;
  ProxyOptions& options_;
  DecisionLog& log_;
  std::function<std::size_t()> close_disallowed_;
  std::shared_ptr<Socket> decider_;
  std::uint64_t next_ask_ = 1;
  std::map<std::uint64_t, std::shared_ptr<Pending>> pending_;
};

/// `--control-send ADDR JSON`: one request line to a running proxy's channel, its one reply
/// line on stdout. Exit 0 when the reply says ok, 1 when it refuses, 2 when the channel
/// cannot be reached. The backends run it with `docker exec` inside the proxy's container.
int control_send(const std::string& address, const std::string& line);

}  // namespace maf::sandbox::egress_proxy
