#pragma once
/// @file watchdog.hpp
/// A bounded wait for the proxy's coroutines (head, dial, idle), shared by the opaque tunnel
/// (proxy_server.cpp) and the terminating one (terminator.cpp).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace maf::sandbox::egress_proxy {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

/// Fires `on_expire` once the deadline passes. Extending the deadline touches no timer:
/// the handler re-arms itself when it wakes early, so a busy tunnel costs no cancellations.
class Watchdog : public std::enable_shared_from_this<Watchdog> {
public:
  Watchdog(asio::io_context& io, std::function<void()> on_expire) : timer_(io), on_expire_(std::move(on_expire)) {}
  void start(std::chrono::milliseconds after) {
    deadline_ = Clock::now() + after;
    arm();
  }
  void extend(std::chrono::milliseconds after) { deadline_ = Clock::now() + after; }
  void stop() {
    stopped_ = true;
    timer_.cancel();
  }
  bool expired() const noexcept { return expired_; }

private:
  void arm() {
    timer_.expires_at(deadline_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code&) {
      if (self->stopped_) return;
      if (Clock::now() < self->deadline_) return self->arm();
      self->expired_ = true;
      self->on_expire_();
    });
  }
  asio::steady_timer timer_;
  std::function<void()> on_expire_;
  Clock::time_point deadline_{};
  bool stopped_ = false;
  bool expired_ = false;
};

const char* status_text(int status);

}  // namespace maf::sandbox::egress_proxy
