#pragma once
// W-13: get-or-create is serialised per identity inside one backend instance. Boost 1.74
// has no awaitable mutex, so a waiter parks on a timer of its own that the holder cancels
// on release (handing the lock over directly, FIFO). Races between processes are settled by
// name-clash adoption (W-17), not here.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <list>
#include <memory>
#include <mutex>

namespace maf::sandbox::wslc::detail {

class KeyLock {
public:
  /// Returns a guard that releases on destruction (also when the coroutine is destroyed).
  boost::asio::awaitable<std::shared_ptr<void>> acquire() {
    auto executor = co_await boost::asio::this_coro::executor;
    std::shared_ptr<boost::asio::steady_timer> ticket;
    {
      std::lock_guard guard(mutex_);
      if (held_) {
        ticket = std::make_shared<boost::asio::steady_timer>(executor, boost::asio::steady_timer::time_point::max());
        queue_.push_back(ticket);
      } else {
        held_ = true;
      }
    }
    if (ticket) {
      boost::system::error_code ignored;  // cancelled = our turn
      co_await ticket->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
    }
    co_return std::shared_ptr<void>(nullptr, [this](void*) { release(); });
  }

private:
  void release() {
    std::shared_ptr<boost::asio::steady_timer> next;
    {
      std::lock_guard guard(mutex_);
      if (queue_.empty()) {
        held_ = false;
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    boost::asio::post(next->get_executor(), [next] { next->cancel(); });
  }

  std::mutex mutex_;
  bool held_ = false;
  std::list<std::shared_ptr<boost::asio::steady_timer>> queue_;
};

}  // namespace maf::sandbox::wslc::detail
