#pragma once
/// @file support/sleep.hpp
/// `co_await support::sleep_for(d)`: suspends the calling coroutine for `d` on its own
/// executor, without blocking the thread — for the bounded polls backends need (readiness of
/// a proxy, a container's state settling, a lifecycle operation completing).
///
/// This header pulls in Boost.Asio: include it from backend sources, not from widely
/// included headers.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

namespace maf::sandbox::support {

inline boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, d);
  co_await timer.async_wait(boost::asio::use_awaitable);
}

}  // namespace maf::sandbox::support
