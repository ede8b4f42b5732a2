#pragma once
// until_stopped: await an operation, or return Cancelled as soon as a stop is requested —
// for the operations the seam cannot stop (Sandbox::exec and run_code take no stop token;
// Boost 1.74 has no per-operation cancellation). The operation runs on after the call has
// returned; whoever uses this owes the program an end (AGENT-7: the call's rung escalated
// to DISPOSE). Private to the tool layer.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::detail {

/// Awaits `op()`, or throws Cancelled as soon as `stop` is requested. `op` owns what the
/// operation needs (the sandbox): it runs on after this has returned.
template <class T>
boost::asio::awaitable<T> until_stopped(std::stop_token stop, std::function<boost::asio::awaitable<T>()> op) {
  auto executor = co_await boost::asio::this_coro::executor;
  struct State {
    explicit State(boost::asio::any_io_executor ex) : wake(ex, boost::asio::steady_timer::time_point::max()) {}
    boost::asio::steady_timer wake;
    std::optional<T> value;
    std::exception_ptr error;
    bool done = false;
  };
  auto state = std::make_shared<State>(executor);
  // expires_at(min) both wakes a waiter and makes a later wait complete at once: no lost wake-up.
  auto wake = [state] { state->wake.expires_at(boost::asio::steady_timer::time_point::min()); };
  boost::asio::co_spawn(
      executor,
      [state, wake, op = std::move(op)]() mutable -> boost::asio::awaitable<void> {
        try {
          state->value.emplace(co_await op());
        } catch (...) {
          state->error = std::current_exception();
        }
        state->done = true;
        wake();
      },
      boost::asio::detached);
  std::stop_callback on_stop(stop, [executor, wake] { boost::asio::post(executor, wake); });
  boost::system::error_code ignored;
  while (!state->done && !stop.stop_requested())
    co_await state->wake.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
  if (!state->done) throw Cancelled();
  if (state->error) std::rethrow_exception(state->error);
  co_return std::move(*state->value);
}

}  // namespace maf::sandbox::detail
